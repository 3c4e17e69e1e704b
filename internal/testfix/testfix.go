package testfix

import (
	"math"
	"math/rand"

	"github.com/admpo/admpo/models"
)

// RefActor is an independent float64 forward pass of a, straight from its
// weights, for the len(obs)/a.ObsDim rows of obs: per row the action
// scale·tanh(u + exp(logstd)·noise) + bias, or with noise nil the
// deterministic scale·tanh(u) + bias. The hidden layers use ReLU, or swish
// when a.Net.Activation is "swish".
func RefActor(a *models.Actor, obs, noise []float32) []float64 {
	lo, hi := float64(a.LogStdMin), float64(a.LogStdMax)
	var out []float64
	for r := 0; r < len(obs)/a.ObsDim; r++ {
		x := make([]float64, a.ObsDim)
		for i := range x {
			x[i] = float64(obs[r*a.ObsDim+i])
		}
		for li, l := range a.Net.Layers {
			y := make([]float64, l.Out)
			for o := range y {
				s := float64(l.B[o])
				for i := 0; i < l.In; i++ {
					s += x[i] * float64(l.W[i*l.Out+o])
				}
				if li+1 < len(a.Net.Layers) {
					if a.Net.Activation == "swish" {
						s /= 1 + math.Exp(-s)
					} else {
						s = math.Max(s, 0)
					}
				}
				y[o] = s
			}
			x = y
		}
		for j := 0; j < a.ActDim; j++ {
			u := x[j]
			if noise != nil {
				logstd := lo + 0.5*(hi-lo)*(math.Tanh(x[a.ActDim+j])+1)
				u += math.Exp(logstd) * float64(noise[r*a.ActDim+j])
			}
			out = append(out, float64(a.Scale[j])*math.Tanh(u)+float64(a.Bias[j]))
		}
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
