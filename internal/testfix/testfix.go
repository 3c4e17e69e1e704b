package testfix

import (
	"math"
	"math/rand"

	"github.com/admpo/admpo/models"
)

// RefActor is Actor for the len(obs)/a.ObsDim rows of obs and, unless nil,
// the matching rows of noise: the actions, row after row.
func RefActor(a *models.Actor, obs, noise []float32) []float64 {
	var out []float64
	for r := 0; r < len(obs)/a.ObsDim; r++ {
		var nz []float64
		if noise != nil {
			nz = F64(noise[r*a.ActDim : (r+1)*a.ActDim])
		}
		act, _ := Actor(a, F64(obs[r*a.ObsDim:(r+1)*a.ObsDim]), nz)
		out = append(out, act...)
	}
	return out
}

// RandNormal returns n standard normal draws from rng.
func RandNormal(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// MaxDiff returns the largest |a[i] - b[i]|, or +Inf when the lengths
// differ.
func MaxDiff(a []float32, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-b[i]))
	}
	return d
}
