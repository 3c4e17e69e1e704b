package dynamics

import (
	"context"
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
// epochs of 7, 7, 7, 7 and 2, each followed by a holdout check.
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

	e := models.NewEnsemble(ls.obs, ls.act, 3, []int{16, 16}, rng)
	efc := DefaultEnsembleFitConfig()
	efc.Batch, efc.Elites, efc.Patience, efc.MaxSteps, efc.MaxTotalSteps = 32, 2, 100, 7, 30
	efc.Decay = nil
	ctx = &stepCounter{Context: context.Background()}
	erep, err := FitEnsemble(ctx, e, data, efc, rng)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.calls != 30 || len(erep.History) != len(wantEpochs) {
		t.Fatalf("ensemble: %d Adam steps in %d epochs, want 30 in %d", ctx.calls, len(erep.History), len(wantEpochs))
	}
}
