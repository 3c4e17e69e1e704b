package infer_test

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// TestPolicyMatchesActor compares Policy.Act with the plain-Go actor
// forward (tanh-squashed Gaussian, rescaled log-std, action bounds), for
// sampled and mean actions and for batch sizes 1 and 37.
func TestPolicyMatchesActor(t *testing.T) {
	ortskip.IfMissing(t)
	const od = 6
	actor := newTestActor(71, od, []float64{-1, -3, 0}, []float64{1, 1, 2}, []int{24, 24})
	b, err := onnx.ExportActor(actor, nil)
	p := openEngine(t, "actor", b, err, infer.OpenPolicy, testOpts)
	if p.ObsDim != od || p.ActDim != 3 {
		t.Fatalf("policy dims %dx%d, want %dx3", p.ObsDim, p.ActDim, od)
	}
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 37} {
		obs := make([]float32, n*od)
		noise := make([]float32, n*3)
		for i := range obs {
			obs[i] = float32(2 * rng.NormFloat64())
		}
		for i := range noise {
			noise[i] = float32(rng.NormFloat64())
		}
		for _, det := range []bool{false, true} {
			out := make([]float32, n*3)
			nz := noise
			if det {
				nz = nil
			}
			if err := p.Act(obs, nz, out); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				var rowNoise []float32
				if !det {
					rowNoise = noise[i*3 : (i+1)*3]
				}
				want := testfix.RefActor(actor, obs[i*od:(i+1)*od], rowNoise)
				for j, w := range want {
					if !testfix.CloseTo(out[i*3+j], float32(w), 1e-5) {
						t.Fatalf("n=%d det=%v row %d action %d = %g, want %g", n, det, i, j, out[i*3+j], w)
					}
				}
			}
		}
	}
}
