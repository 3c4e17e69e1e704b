package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// TestTrainOfflineDatasetErrors checks what `admpo train offline` says about
// its --dataset: a missing, truncated or NaN-holding file is reported as
// such (exit code 1, no run directory); a readable file whose metadata and
// name give no task trains without evaluation (bring your own data), with
// --eval-env evaluated in a task of the same sizes, while a task of other
// sizes or a bad --termination is a usage error that makes no run
// directory; with --env and --kind it trains as that task's data set.
func TestTrainOfflineDatasetErrors(t *testing.T) {
	tmp := t.TempDir()
	d := trainfix.RandomHopper(t, 200, 1)
	d.Meta = nil // no env, no kind
	anon := filepath.Join(tmp, "mydata.hdf5")
	trainfix.WriteD4RL(t, anon, d)
	whole, err := os.ReadFile(anon)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(tmp, "hopper-random.hdf5")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(tmp, "hopper-medium.hdf5"), "no such file"},
		{"truncated", cut, "truncated"},
	} {
		out := filepath.Join(tmp, "run-"+c.name)
		err := trainOffline([]string{"--dataset", c.path, "--out", out})
		if err == nil || errors.Is(err, errUsage) || exitCode(err) != 1 {
			t.Fatalf("%s file: error %v (exit %d), want a plain error", c.name, err, exitCode(err))
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) || strings.Contains(err.Error(), "--env") {
			t.Errorf("%s file: %q should name the file and %q, without a --env hint", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s file: a run directory was made", c.name)
		}
	}
	// Usage problems of data without a task: no run directory either.
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"eval-env sizes", []string{"--eval-env", "walker2d"}, "11 observation and 3 action values, the task walker2d has 17 and 6"},
		{"termination task", []string{"--termination", "task"}, "--termination \"task\""},
		{"termination bad", []string{"--termination", "maybe"}, "--termination \"maybe\""},
	} {
		out := filepath.Join(tmp, "run-usage")
		err := trainOffline(append([]string{"--dataset", anon, "--out", out}, c.args...))
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error containing %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: a run directory was made", c.name)
		}
	}
	if _, err := exec.LookPath("/usr/bin/python3"); err == nil && exec.Command("/usr/bin/python3", "-c", "import h5py").Run() == nil {
		nan := filepath.Join(tmp, "nan.hdf5")
		if err := os.WriteFile(nan, whole, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("/usr/bin/python3", "-c", "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f['rewards'][7]=float('nan'); f.close()", nan).CombinedOutput(); err != nil {
			t.Fatalf("h5py: %v %s", err, out)
		}
		out := filepath.Join(tmp, "run-nan")
		err := trainOffline([]string{"--dataset", nan, "--out", out})
		if err == nil || !strings.Contains(err.Error(), "rewards[row 7, col 0] is NaN") {
			t.Errorf("NaN rewards: %v", err)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Error("NaN rewards: a run directory was made")
		}
	} else {
		t.Log("skipping the NaN file case: /usr/bin/python3 with h5py is needed to write one")
	}
	ortskip.IfMissing(t)
	// Without a task the data train: no evaluation, the learned
	// termination (the data hold hopper's falls), sizes in config.json.
	anonOut := filepath.Join(tmp, "run-anon")
	if err := trainOffline([]string{"--dataset", anon, "--algo", "mopo", "--epochs", "1", "--steps-per-epoch", "5", "--rollout-every", "5",
		"--rollout-batch", "20", "--horizon", "2", "--ensemble", "2", "--elites", "1", "--model-max-epochs", "1", "--hidden", "16,16",
		"--out", anonOut}); err != nil {
		t.Fatalf("data without a task: %v", err)
	}
	var ac struct {
		Env         string `json:"env"`
		ObsDim      int    `json:"obs_dim"`
		ActDim      int    `json:"act_dim"`
		Termination string `json:"termination"`
		Name        string `json:"dataset_name"`
	}
	if b, err := os.ReadFile(filepath.Join(anonOut, "config.json")); err != nil || json.Unmarshal(b, &ac) != nil ||
		ac.Env != "" || ac.ObsDim != 11 || ac.ActDim != 3 || ac.Termination != "learned" || ac.Name != "mydata" {
		t.Fatalf("config of the run without a task: %+v (%v)", ac, err)
	}
	evalOut := filepath.Join(tmp, "run-eval")
	if err := trainOffline([]string{"--dataset", anon, "--eval-env", "hopper", "--algo", "bc", "--epochs", "1", "--steps-per-epoch", "5",
		"--eval-episodes", "1", "--out", evalOut}); err != nil {
		t.Fatalf("--eval-env hopper: %v", err)
	}
	recs, err := train.ReadProgressCSV(filepath.Join(evalOut, "progress.csv"))
	if err != nil || len(recs) != 1 || math.IsNaN(recs[0].EvalMean) {
		t.Fatalf("--eval-env hopper: progress %+v (%v), want an evaluation", recs, err)
	}
	out := filepath.Join(tmp, "run-named")
	err = trainOffline([]string{"--dataset", anon, "--env", "hopper", "--kind", "random", "--algo", "bc",
		"--epochs", "1", "--steps-per-epoch", "5", "--eval-episodes", "1", "--out", out})
	if err != nil {
		t.Fatalf("with --env and --kind: %v", err)
	}
	var cfg struct {
		Name string `json:"dataset_name"`
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || cfg.Name != "hopper-random" {
		t.Fatalf("run config: %+v (%v), want data set name hopper-random", cfg, err)
	}
}
