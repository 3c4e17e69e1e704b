package train

import (
	"context"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
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

// budgetRecorder records the step budget of every fit.
type budgetRecorder struct {
	Dynamics
	budgets []int
}

func (d *budgetRecorder) Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (FitReport, error) {
	d.budgets = append(d.budgets, maxSteps)
	return d.Dynamics.Fit(ctx, real, maxSteps, rng)
}

// TestOnlineFitBudgetFollowsNewData checks the cpu preset's rule: the fit
// at env step s gets ceil(rate · (s - s_prev)) Adam steps, s_prev the step
// of the previous fit (0 before the first), and no cap at rate 0. It also
// checks that the cpu preset differs from the paper's only where it says.
func TestOnlineFitBudgetFollowsNewData(t *testing.T) {
	for _, algo := range []string{"admpo", "mbpo"} {
		for _, rate := range []float64{0.3, 0} {
			cfg := tinyConfig(algo)
			cfg.ModelEvery, cfg.ModelStepsPerRow = 100, rate // fits at env steps 200, 300, 400, 500
			o, err := NewOnline(cfg, t.TempDir()+"/run")
			if err != nil {
				t.Fatal(err)
			}
			rec := &budgetRecorder{Dynamics: o.dyn}
			o.dyn = rec
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			o.Close()
			want := []int{60, 30, 30, 30} // ceil(0.3·200), then ceil(0.3·100)
			if rate == 0 {
				want = []int{0, 0, 0, 0}
			}
			if len(rec.budgets) != len(want) {
				t.Fatalf("%s rate %v: %d fits, want %d", algo, rate, len(rec.budgets), len(want))
			}
			for i := range want {
				if rec.budgets[i] != want[i] {
					t.Fatalf("%s rate %v: fit budgets %v, want %v", algo, rate, rec.budgets, want)
				}
			}
		}
	}
	for _, algo := range []string{"admpo", "mbpo", "sac"} {
		paper, err := Preset("paper", "hopper", algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := Preset("cpu", "hopper", algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		paper.Preset = "cpu"
		paper.ModelWarmStart, paper.ModelStepsPerRow, paper.ModelEpochSteps, paper.RolloutBatch = true, 0.8, 50, 25000
		if string(paper.JSON()) != string(cpu.JSON()) {
			t.Fatalf("%s: the cpu preset differs from the paper's in more than its four settings:\n%s\n%s", algo, paper.JSON(), cpu.JSON())
		}
	}
}
