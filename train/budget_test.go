package train

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/rundir"
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
		if algo == "admpo" {
			paper.ModelLR = 1e-3 // the ADM's rate at the cpu preset's budget (TestCPUPresetADMRate)
		}
		if string(paper.JSON()) != string(cpu.JSON()) {
			t.Fatalf("%s: the cpu preset differs from the paper's in more than its settings (four, and the ADM's rate):\n%s\n%s", algo, paper.JSON(), cpu.JSON())
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

// TestOfflineCPUPresetDiffersOnlyWhereItSays: the offline cpu preset is the
// paper preset with the four settings its doc lists changed, for every
// algorithm and for ADMPO-OFF's per-data-set values.
func TestOfflineCPUPresetDiffersOnlyWhereItSays(t *testing.T) {
	for _, algo := range OfflineAlgos {
		for _, kind := range []string{"medium", "medium-replay", "random"} {
			paper, err := OfflinePreset("paper", "hopper", kind, algo, 3)
			if err != nil {
				t.Fatal(err)
			}
			cpu, err := OfflinePreset("cpu", "hopper", kind, algo, 3)
			if err != nil {
				t.Fatal(err)
			}
			paper.Preset = "cpu"
			paper.Epochs, paper.RolloutBatch, paper.ModelEpochSteps, paper.ModelMaxEpochs = 200, 10000, 1000, 30
			if string(paper.JSON()) != string(cpu.JSON()) {
				t.Fatalf("%s %s: the cpu preset differs from the paper's in more than its four settings:\n%s\n%s", algo, kind, paper.JSON(), cpu.JSON())
			}
		}
	}
}

// TestOfflineModelEpochSteps: model_epoch_steps reaches the fit, whose
// epochs then hold that many Adam steps each, as model_fit.csv records
// (epochs x steps, capped by model_max_epochs); a config.json without the
// key keeps full passes.
func TestOfflineModelEpochSteps(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 1500) // > 3 fit batches of 256 train starts (the fit's batch, not SAC's)
	for _, algo := range []string{"admpo", "mopo"} {
		cfg := Fixtures.TinyOfflineConfig(t, algo, "random", data)
		cfg.Epochs, cfg.StepsPerEpoch, cfg.Batch = 1, 10, 16
		cfg.ModelEpochSteps, cfg.ModelMaxEpochs, cfg.ModelPatience = 3, 4, 10
		if got := cfg.dynamicsConfig().EpochSteps; got != 3 {
			t.Fatalf("%s: dynamics config EpochSteps %d, want 3", algo, got)
		}
		dir := filepath.Join(t.TempDir(), algo)
		Fixtures.RunOfflineToEnd(t, cfg, dir)
		f, err := os.Open(filepath.Join(dir, rundir.ModelFitFile))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1+4 || rows[0][1] != "adam_steps" {
			t.Fatalf("%s: model_fit.csv %v, want a header and 4 epochs", algo, rows)
		}
		for i, r := range rows[1:] {
			if want := strconv.Itoa(3 * (i + 1)); r[0] != strconv.Itoa(i+1) || r[1] != want {
				t.Fatalf("%s: model_fit.csv row %d is %v, want epoch %d at %s Adam steps", algo, i+1, r, i+1, want)
			}
		}
		if algo == "admpo" && len(rows[0]) != 6+cfg.M {
			t.Fatalf("admpo: model_fit.csv header %v, want holdout_mse_k1..k%d", rows[0], cfg.M)
		}
	}
	var c OfflineConfig
	if err := json.Unmarshal([]byte(`{"algo":"admpo","model_max_epochs":3}`), &c); err != nil || c.ModelEpochSteps != 0 {
		t.Fatalf("a config without model_epoch_steps: %d (%v), want 0 (full passes)", c.ModelEpochSteps, err)
	}
	if b := (OfflineConfig{}).JSON(); strings.Contains(string(b), "model_epoch_steps") {
		t.Fatalf("model_epoch_steps 0 is written (configs of earlier runs would change): %s", b)
	}
}

// TestEnsembleLRReachesTheModel: ensemble_lr reaches the dynamics config of
// both loops (the ensemble's fit reads it there: dynamics.NewEnsemble), the
// presets write MBPO's 1e-3 for mbpo and mopo only, and a negative one is
// refused for the ensemble algorithms.
func TestEnsembleLRReachesTheModel(t *testing.T) {
	on, err := Preset("cpu", "hopper", "mbpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	off, err := OfflinePreset("cpu", "hopper", "medium", "mopo", 3)
	if err != nil {
		t.Fatal(err)
	}
	if on.EnsembleLR != 1e-3 || off.EnsembleLR != 1e-3 {
		t.Fatalf("preset ensemble_lr: mbpo %v, mopo %v, want 1e-3", on.EnsembleLR, off.EnsembleLR)
	}
	on.EnsembleLR, off.EnsembleLR = 2e-3, 4e-4
	if got := on.dynamicsConfig().EnsembleLR; got != 2e-3 {
		t.Errorf("online dynamics config EnsembleLR %v, want 2e-3", got)
	}
	if got := off.dynamicsConfig().EnsembleLR; got != 4e-4 {
		t.Errorf("offline dynamics config EnsembleLR %v, want 4e-4", got)
	}
	for _, algo := range []string{"admpo", "sac"} {
		c, err := Preset("cpu", "hopper", algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		if c.EnsembleLR != 0 {
			t.Errorf("%s preset has ensemble_lr %v: it has no ensemble", algo, c.EnsembleLR)
		}
	}
	on.EnsembleLR = -1
	if err := on.Validate(); err == nil || !strings.Contains(err.Error(), "ensemble learning rate") {
		t.Fatalf("ensemble_lr -1 for mbpo: %v, want an ensemble learning rate error", err)
	}
}

// TestCPUPresetADMRate: the cpu preset trains ADMPO-ON's ADM at 1e-3 (its
// capped fit budget; chosen on model error), the paper preset at the
// authors' 3e-4, and the other algorithms' configs keep 3e-4 (the key is the
// ADM's, which they do not have), so their table runs' configs are unchanged.
func TestCPUPresetADMRate(t *testing.T) {
	for _, c := range []struct {
		preset, algo string
		want         float64
	}{
		{"cpu", "admpo", 1e-3}, {"paper", "admpo", 3e-4}, {"cpu", "mbpo", 3e-4}, {"cpu", "sac", 3e-4},
	} {
		cfg, err := Preset(c.preset, "hopper", c.algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ModelLR != c.want {
			t.Errorf("%s %s: model_lr %v, want %v", c.preset, c.algo, cfg.ModelLR, c.want)
		}
	}
}
