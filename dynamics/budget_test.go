package dynamics

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models"
)

// stepCounter is a context that counts Err calls: both fits ask it once
// before every Adam step, so it counts the steps from outside the fit.
type stepCounter struct {
	context.Context
	calls int
}

func (c *stepCounter) Err() error { c.calls++; return nil }

// TestFitBudgetCapsAdamSteps fits the ADM and the ensemble with epochs of
// at most 7 Adam steps and a budget of 30: exactly 30 steps must run, in
// epochs of 7, 7, 7, 7 and 2, each followed by a holdout check. The
// learning curve (FitReport.Curve, and OnEpoch as the fit goes) counts the
// steps so far: 7, 14, 21, 28, 30.
func TestFitBudgetCapsAdamSteps(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ls := newLinearSystem(0.97, rng)
	data := linearReplay(t, ls, 40, 25, rng)
	wantEpochs := []int{7, 7, 7, 7, 2}

	m, err := models.NewADM(models.ADMConfig{ObsDim: ls.obs, ActDim: ls.act, Hidden: 16, Layers: 1, ResBlocks: 1, M: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	fc := DefaultADMFitConfig()
	fc.Batch, fc.Patience, fc.MaxSteps, fc.MaxTotalSteps = 32, 100, 7, 30
	var seen []FitEpoch
	fc.OnEpoch = func(e FitEpoch) { seen = append(seen, e) }
	ctx := &stepCounter{Context: context.Background()}
	rep, err := FitADM(ctx, m, data, fc, rng)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.calls != 30 || len(rep.History) != len(wantEpochs) {
		t.Fatalf("ADM: %d Adam steps in %d epochs, want 30 in %d", ctx.calls, len(rep.History), len(wantEpochs))
	}
	for i, e := range rep.History {
		if e.Steps != wantEpochs[i] {
			t.Fatalf("ADM epoch %d ran %d steps, want %d", i+1, e.Steps, wantEpochs[i])
		}
	}
	checkCurve(t, "ADM", rep.Curve, seen)
	for i, e := range rep.History {
		if c := rep.Curve[i]; c.HoldoutLoss != e.HoldoutMSE || c.StopMetric != e.HoldoutScaledMSE || len(c.HoldoutPerK) != 3 {
			t.Fatalf("ADM curve point %d %+v does not hold epoch %+v's holdout MSEs", i+1, c, e)
		}
	}

	e := models.NewEnsemble(ls.obs, ls.act, 3, []int{16, 16}, rng)
	efc := DefaultEnsembleFitConfig()
	efc.Batch, efc.Elites, efc.Patience, efc.MaxSteps, efc.MaxTotalSteps = 32, 2, 100, 7, 30
	efc.Decay = nil
	seen = nil
	efc.OnEpoch = func(e FitEpoch) { seen = append(seen, e) }
	ctx = &stepCounter{Context: context.Background()}
	erep, err := FitEnsemble(ctx, e, data, efc, rng)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.calls != 30 || len(erep.History) != len(wantEpochs) {
		t.Fatalf("ensemble: %d Adam steps in %d epochs, want 30 in %d", ctx.calls, len(erep.History), len(wantEpochs))
	}
	checkCurve(t, "ensemble", erep.Curve, seen)
	for i, e := range erep.History {
		// the mean holdout MSE of the epoch's 2 best members (the elites
		// count): those with fewer than 2 members better than them
		var sum float64
		for _, v := range e.HoldoutMSE {
			better := 0
			for _, w := range e.HoldoutMSE {
				if w < v {
					better++
				}
			}
			if better < 2 {
				sum += v
			}
		}
		if want := sum / 2; math.Abs(erep.Curve[i].HoldoutLoss-want) > 1e-12 {
			t.Fatalf("ensemble curve point %d: holdout %v, want the 2 best members' mean %v (%v)", i+1, erep.Curve[i].HoldoutLoss, want, e.HoldoutMSE)
		}
	}
}

// checkCurve checks a fit's learning curve against the epochs of 7, 7, 7, 7
// and 2 Adam steps, and the points OnEpoch saw against it.
func checkCurve(t *testing.T, name string, curve, seen []FitEpoch) {
	t.Helper()
	want := []int{7, 14, 21, 28, 30}
	if len(curve) != len(want) || len(seen) != len(want) {
		t.Fatalf("%s: %d curve points, %d OnEpoch calls, want %d", name, len(curve), len(seen), len(want))
	}
	for i, c := range curve {
		if c.Epoch != i+1 || c.AdamSteps != want[i] || c.Seconds < 0 || (i > 0 && c.Seconds < curve[i-1].Seconds) {
			t.Fatalf("%s: curve point %d is %+v, want epoch %d at %d Adam steps", name, i+1, c, i+1, want[i])
		}
		if s := seen[i]; s.Epoch != c.Epoch || s.AdamSteps != c.AdamSteps || s.HoldoutLoss != c.HoldoutLoss {
			t.Fatalf("%s: OnEpoch saw %+v, the curve has %+v", name, s, c)
		}
	}
}
