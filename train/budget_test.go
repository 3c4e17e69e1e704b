package train

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
)

// budgetRecorder records the step budget of every fit.
type budgetRecorder struct {
	dynamics.Model
	budgets []int
}

func (d *budgetRecorder) Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (dynamics.FitReport, error) {
	d.budgets = append(d.budgets, maxSteps)
	return d.Model.Fit(ctx, real, maxSteps, rng)
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
			rec := &budgetRecorder{Model: o.dyn}
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

// TestOfflineModelLR: train offline's model_lr reaches the ADM's fit (it
// was dropped before 2026-11-25: the ADM always fitted at 3e-4), and a
// non-positive one is refused for admpo by the shared model validation.
func TestOfflineModelLR(t *testing.T) {
	cfg, err := OfflinePreset("quick", "hopper", "medium", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dataset, cfg.ObsDim, cfg.ActDim = "d/hopper-medium.hdf5", 11, 3
	cfg.ModelLR = 1e-3
	if got := cfg.dynamicsConfig().LR; got != 1e-3 {
		t.Fatalf("dynamics config LR %v, want the config's model_lr 1e-3", got)
	}
	cfg.ModelLR = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model learning rate") {
		t.Fatalf("model_lr 0 for admpo: %v, want a model learning rate error", err)
	}
	cfg.Algo = "bc"
	if err := cfg.Validate(); err != nil && strings.Contains(err.Error(), "model learning rate") {
		t.Fatalf("bc has no model: %v", err)
	}
}
