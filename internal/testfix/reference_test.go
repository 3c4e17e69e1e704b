package testfix

import (
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/admpo/admpo/models"
)

// TestReferenceByHand checks pieces of the reference on values worked out
// by hand from the equations in models/weights.go.
func TestReferenceByHand(t *testing.T) {
	// A GRU with zero weights has r = z = 1/2 and n = 0: h' = h/2.
	g := models.GRULayer{In: 1, Hidden: 2, Wi: make([]float32, 6), Wh: make([]float32, 12), Bi: make([]float32, 6), Bh: make([]float32, 6)}
	if h := GRUStep(&g, []float64{3}, []float64{1, -4}); h[0] != 0.5 || h[1] != -2 {
		t.Errorf("zero GRU step: %v, want [0.5 -2]", h)
	}
	// LayerNorm of [1, 3] is [-1, 1] (up to Eps) times Gamma plus Beta.
	n := models.LayerNorm{Dim: 2, Gamma: []float32{2, 1}, Beta: []float32{0, 1}, Eps: 0}
	if y := LayerNorm(&n, []float64{1, 3}); y[0] != -2 || y[1] != 2 {
		t.Errorf("LayerNorm: %v, want [-2 2]", y)
	}
	// The soft clamp takes far-out values to the bounds (up to softplus
	// tails) and leaves the middle almost untouched.
	b := models.LogVarBounds{Max: []float32{0.5, 0.5, 0.5}, Min: []float32{-10, -10, -10}}
	lv := SoftClamp(&b, []float64{-100, -4, 100})
	if math.Abs(lv[0]+10) > 1e-3 || math.Abs(lv[1]+4) > 0.02 || math.Abs(lv[2]-0.5) > 1e-3 {
		t.Errorf("SoftClamp: %v", lv)
	}
	l := models.Linear{In: 2, Out: 1, W: []float32{2, -1}, B: []float32{0.5}}
	if y := Linear(&l, []float64{3, 4}); y[0] != 2.5 {
		t.Errorf("Linear: %v, want [2.5]", y)
	}
}

// TestReferenceConsistent checks that the reference's entry points agree
// with each other: ADM's last step is ADMPredict's, ResBlock multipliers of
// 1 are no dropout, and an actor without noise gives its mean action.
func TestReferenceConsistent(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cfg := models.ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 2, M: 3}
	m, err := models.NewADM(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	s := RandNormal(rng, cfg.ObsDim)
	acts := [][]float32{RandNormal(rng, 2), RandNormal(rng, 2), RandNormal(rng, 2)}
	means, lvs := ADM(m, F64(s), [][]float64{F64(acts[0]), F64(acts[1]), F64(acts[2])})
	ones := [][]float64{{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}}
	next, rew, lv := ADMPredict(m, s, acts, ones)
	for i := range next {
		if next[i] != float64(s[i])+means[2][i] {
			t.Errorf("next[%d] = %v, want %v", i, next[i], float64(s[i])+means[2][i])
		}
	}
	if rew != means[2][cfg.ObsDim] || !slices.Equal(lv, lvs[2]) {
		t.Errorf("reward %v, log-variance %v; ADM says %v, %v", rew, lv, means[2][cfg.ObsDim], lvs[2])
	}
	a := models.NewActor(4, []float64{-1, 0}, []float64{1, 2}, []int{8}, rng)
	act, mean := Actor(a, F64(RandNormal(rng, 4)), nil)
	if act[0] != mean[0] || act[1] != mean[1] || mean[1] < 0 || mean[1] > 2 {
		t.Errorf("actor without noise: action %v, mean %v", act, mean)
	}
}
