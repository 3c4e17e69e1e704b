package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/train"
)

// TestTrainOfflineDatasetErrors checks what `admpo train offline` says about
// its --dataset: a missing or truncated file is reported as such (exit code
// 1, no hint about --env/--kind, no run directory); a readable file whose
// metadata and name give no task is a usage error asking for --env and
// --kind, and with them it trains.
func TestTrainOfflineDatasetErrors(t *testing.T) {
	tmp := t.TempDir()
	d, _, err := train.CollectDataset("hopper", 200, 1, 0, train.SharedSource(train.UniformPolicy{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	d.Meta = nil // no env, no kind
	anon := filepath.Join(tmp, "mydata.hdf5")
	if err := datasets.WriteD4RL(anon, d); err != nil {
		t.Fatal(err)
	}
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
	err = trainOffline([]string{"--dataset", anon, "--out", filepath.Join(tmp, "run-anon")})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--env and --kind") {
		t.Fatalf("data set without env/kind: %v, want a usage error asking for --env and --kind", err)
	}
	if err := infer.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make setup`): %v", err)
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
