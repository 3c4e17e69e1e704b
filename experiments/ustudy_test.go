package experiments

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/window"
)

// TestEnsembleUncertaintyStep checks the ensemble's step in the uncertainty
// study on the linear members of openloop_test.go: the mean prediction is
// the elites' average of c_i·A s + B a, the drawn component is one elite's
// prediction, and U is the largest norm of the predicted std over all
// members (set through the output biases of the log-variance).
func TestEnsembleUncertaintyStep(t *testing.T) {
	l := linSys{th: 0.3, b: []float64{0.4, -0.1}}
	cs := []float64{0.9, 1.2, 1.5}
	e := linearEnsemble(l, cs, []int{0, 2})
	// Log-variance outputs (3..5) are constant biases: member i gets lv = i-2
	// on every dim, so ||std|| = sqrt(3·e^(i-2)); member 2 (lv = 0) is largest.
	for i := range e.Members {
		for j := 3; j < 6; j++ {
			e.Members[i].Layers[0].B[j] = float32(i - 2)
		}
	}
	h := window.New(2, 1, 2, 1)
	h.Load(0, [][]float32{{1, 0}}, nil)
	h.Load(1, [][]float32{{0.5, -2}}, nil)
	h.SetAction(0, []float32{0.5})
	h.SetAction(1, []float32{-1})
	pr, err := (&ensembleU{e: e}).predict(h, []int{0, 1}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	mean, drawn, u := pr.mean, pr.drawn, pr.u
	for q := 0; q < 2; q++ {
		s := []float64{float64(h.Current(q)[0]), float64(h.Current(q)[1])}
		a := float64(h.Action(q, 0)[0])
		r := l.rot(s, 1)
		pred := func(c float64) []float64 { return []float64{c*r[0] + l.b[0]*a, c*r[1] + l.b[1]*a} }
		p0, p2 := pred(cs[0]), pred(cs[2])
		for i := 0; i < 2; i++ {
			want := (p0[i] + p2[i]) / 2
			if math.Abs(float64(mean[q*2+i])-want) > 1e-5 {
				t.Errorf("row %d dim %d: mean %v, want the elites' average %v", q, i, mean[q*2+i], want)
			}
			if d0, d2 := math.Abs(float64(drawn[q*2+i])-p0[i]), math.Abs(float64(drawn[q*2+i])-p2[i]); math.Min(d0, d2) > 1e-5 {
				t.Errorf("row %d: the drawn prediction %v is no elite's", q, drawn[q*2:q*2+2])
			}
		}
		// The soft bounds barely move lv = 0 (max 0.5, min -10).
		if want := math.Sqrt(3 * math.Exp(0.5-math.Log1p(math.Exp(0.5)))); math.Abs(u[q]-want) > 1e-4 {
			t.Errorf("row %d: U %v, want %v (member 2, a non-elite)", q, u[q], want)
		}
		// Mixture variance over all three members, state dims only:
		// sum_d [mean_i(var_i + mu_id²) - (mean_i mu_id)²].
		var want float64
		p1 := pred(cs[1])
		for i := 0; i < 2; i++ {
			mus := []float64{p0[i], p1[i], p2[i]}
			var m1, m2 float64
			for j, mu := range mus {
				lv := float64(j - 2)
				lv = 0.5 - math.Log1p(math.Exp(0.5-lv)) // the soft bounds, max 0.5 ...
				lv = -10 + math.Log1p(math.Exp(lv+10))  // ... and min -10
				m1 += mu / 3
				m2 += (math.Exp(lv) + mu*mu) / 3
			}
			want += m2 - m1*m1
		}
		if math.Abs(pr.uVar[q]-want) > 1e-5*want {
			t.Errorf("row %d: mixture variance %v, want %v", q, pr.uVar[q], want)
		}
	}
}
