package train

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/tbevent"
	"github.com/admpo/admpo/internal/tbevent/tbcheck"
	"github.com/admpo/admpo/rundir"
)

// tbSteps reads a run directory's event files with the independent Python
// reader and returns the steps of their scalar events in file order, and
// the events by step (failing on a step logged twice).
func tbSteps(t *testing.T, dir string) ([]int64, map[int64]tbcheck.Event) {
	t.Helper()
	files, err := tbevent.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("%s has no event file", dir)
	}
	var steps []int64
	byStep := map[int64]tbcheck.Event{}
	for i, evs := range tbcheck.Read(t, files...) {
		if len(evs) == 0 || evs[0].FileVersion != tbevent.FileVersion {
			t.Fatalf("%s does not start with a file_version event", files[i])
		}
		for _, e := range evs[1:] {
			if _, dup := byStep[e.Step]; dup {
				t.Fatalf("step %d logged twice", e.Step)
			}
			steps = append(steps, e.Step)
			byStep[e.Step] = e
		}
	}
	return steps, byStep
}

// near compares a float32 event value with a progress.csv cell (7
// significant digits).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) }

// TestOnlineTensorBoardResumeLogsEachStepOnce evaluates every 150 env steps
// and checkpoints every 300; the first process is killed at 500 after
// logging 150, 300 and 450. The resumed run (from 300) must drop 450 from
// the first file and log 450 and 600 in a new one, with the values of
// progress.csv.
func TestOnlineTensorBoardResumeLogsEachStepOnce(t *testing.T) {
	cfg := tinyConfig("admpo")
	cfg.EvalEvery = 150
	dir := filepath.Join(t.TempDir(), "run")
	killed(t, NewOnline, cfg, dir, 500)
	if steps, _ := tbSteps(t, dir); len(steps) != 3 || steps[2] != 450 {
		t.Fatalf("before the resume: steps %v, want [150 300 450]", steps)
	}
	c := resumed(t, ResumeOnline, dir)
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	files, _ := tbevent.Files(dir)
	if len(files) != 2 {
		t.Fatalf("%d event files, want one per process start", len(files))
	}
	steps, byStep := tbSteps(t, dir)
	want := []int64{150, 300, 450, 600}
	if len(steps) != len(want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("steps %v, want %v", steps, want)
		}
	}
	rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		e := byStep[int64(r.Step)]
		for tag, v := range map[string]float64{"eval/return_mean": r.EvalMean, "eval/return_std": r.EvalStd,
			"sac/alpha": r.Alpha, "sac/critic_loss": r.CriticLoss, "model/holdout_mse": r.ModelHoldoutLoss,
			"rollout/length": float64(r.RolloutLen), "rollout/model_buffer": float64(r.ModelBuffer)} {
			got, ok := e.Value(tag)
			if math.IsNaN(v) {
				if ok {
					t.Errorf("step %d: %s = %v logged but not measured", r.Step, tag, got)
				}
				continue
			}
			if !ok || !near(got, v) {
				t.Errorf("step %d: %s = %v (logged %v), progress.csv %v", r.Step, tag, got, ok, v)
			}
		}
		if got, ok := e.Value("perf/steps_per_second"); !ok || got <= 0 {
			t.Errorf("step %d: steps per second %v (%v)", r.Step, got, ok)
		}
	}
	last := byStep[600]
	for k := 1; k <= cfg.M; k++ {
		if _, ok := last.Value("model/holdout_mse_k" + string(rune('0'+k))); !ok {
			t.Errorf("step 600 lacks model/holdout_mse_k%d", k)
		}
	}
}

// TestTensorBoardOff: SetTensorBoard(false) writes no event file.
func TestTensorBoardOff(t *testing.T) {
	cfg := tinyConfig("sac")
	cfg.Steps = 100
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOnline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.SetTensorBoard(false)
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if files, _ := tbevent.Files(dir); len(files) != 0 {
		t.Errorf("event files %v with TensorBoard off", files)
	}
}

// TestOfflineTensorBoardScalars checks an ADMPO-OFF run's events against
// offline.csv: normalised score, raw return, U^ADM statistics, per-k
// holdout errors.
func TestOfflineTensorBoardScalars(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	cfg := Fixtures.TinyOfflineConfig(t, "admpo", "medium-replay", data)
	dir := filepath.Join(t.TempDir(), "run")
	Fixtures.RunOfflineToEnd(t, cfg, dir)
	steps, byStep := tbSteps(t, dir)
	if len(steps) != 3 || steps[0] != 100 || steps[2] != 300 {
		t.Fatalf("steps %v, want [100 200 300]", steps)
	}
	rows, err := ReadOfflineLog(filepath.Join(dir, rundir.OfflineLogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		e := byStep[int64(r.Step)]
		for tag, v := range map[string]float64{"eval/normalized_score_mean": r.ScoreMean, "eval/return_mean": r.ReturnMean,
			"rollout/u_mean": r.Roll.UMean, "rollout/u_max": r.Roll.UMax, "rollout/penalty_mean": r.Roll.PenaltyMean,
			"rollout/transitions": float64(r.Roll.Transitions), "sac/q_mean": r.QMean} {
			if got, ok := e.Value(tag); !ok || !near(got, v) {
				t.Errorf("update %d: %s = %v (logged %v), offline.csv %v", r.Step, tag, got, ok, v)
			}
		}
		for _, tag := range []string{"model/holdout_mse_k1", "model/holdout_mse_k2", "sac/alpha", "perf/steps_per_second"} {
			if _, ok := e.Value(tag); !ok {
				t.Errorf("update %d lacks %s", r.Step, tag)
			}
		}
	}
}
