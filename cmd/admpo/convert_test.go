package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/datasets"
)

// TestCollectMinariConvertAndTrain: `collect --format minari` writes a
// Minari directory whose transitions equal the D4RL file the same command
// writes; `convert` takes it to D4RL and back without changing a value;
// `train offline` trains on the directory; h5py sees the episode layout.
func TestCollectMinariConvertAndTrain(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "hopper-random.hdf5")
	dir := filepath.Join(tmp, "hopper-random-v0")
	base := []string{"--env", "hopper", "--kind", "random", "--size", "1500", "--seed", "2", "--workers", "1"}
	for _, extra := range [][]string{{"--out", file}, {"--out", dir, "--format", "minari"}} {
		if _, err := captureStdout(t, func() error { return runCollect(append(append([]string{}, base...), extra...)) }); err != nil {
			t.Fatal(err)
		}
	}
	want, err := datasets.ReadD4RL(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := datasets.ReadMinari(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := want.N - 1; !want.Terminal[n] && !want.Timeout[n] {
		want.Timeout[n] = true // the cut last episode ends truncated in Minari
	}
	want.QPos, want.QVel = nil, nil // D4RL's infos are not carried over
	sameData(t, "minari vs d4rl collection", got, want)
	if got.Meta["env"] != "hopper" || got.Meta["kind"] != "random" {
		t.Errorf("minari metadata %v", got.Meta)
	}

	back := filepath.Join(tmp, "back.hdf5")
	again := filepath.Join(tmp, "again")
	for _, args := range [][]string{{"--in", dir, "--out", back}, {"--in", back, "--out", again}} {
		if _, err := captureStdout(t, func() error { return runConvert(args) }); err != nil {
			t.Fatal(err)
		}
	}
	b, err := datasets.ReadD4RL(back)
	if err != nil {
		t.Fatal(err)
	}
	sameData(t, "minari -> d4rl", b, want)
	a, err := datasets.ReadMinari(again)
	if err != nil {
		t.Fatal(err)
	}
	sameData(t, "d4rl -> minari", a, want)
	if err := runConvert([]string{"--in", back, "--out", again}); !errors.Is(err, errUsage) {
		t.Errorf("convert onto an existing output: %v, want a usage error", err)
	}
	if err := runCollect(append(append([]string{}, base...), "--format", "parquet")); !errors.Is(err, errUsage) {
		t.Errorf("--format parquet: %v, want a usage error", err)
	}

	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		out, err := exec.Command("/usr/bin/python3", "-c", `
import h5py, json, sys
m = json.load(open(sys.argv[1] + "/data/metadata.json"))
f = h5py.File(sys.argv[1] + "/data/main_data.hdf5", "r")
g = f["episode_0"]
print(json.dumps([m["total_steps"], m["total_episodes"], len(f.keys()), g["observations"].shape[0] - g["rewards"].shape[0],
                  json.loads(m["action_space"])["low"]]))
`, dir).Output()
		if err != nil {
			t.Fatalf("h5py: %v", err)
		}
		var v []any
		json.Unmarshal(out, &v)
		if v[0] != 1500.0 || v[1] != float64(len(want.Episodes())) || v[2] != v[1] || v[3] != 1.0 || v[4].([]any)[0] != -1.0 {
			t.Errorf("h5py sees %v; want 1500 steps, %d episodes, T+1 observations, hopper's bounds", v, len(want.Episodes()))
		}
	}

	run := filepath.Join(tmp, "run")
	if _, err := captureStdout(t, func() error {
		return trainOffline([]string{"--dataset", dir, "--algo", "bc", "--epochs", "1", "--steps-per-epoch", "20", "--batch", "8",
			"--hidden", "8,8", "--eval-episodes", "1", "--out", run})
	}); err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(filepath.Join(run, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Env, Dataset, Dataset_kind string }
	json.Unmarshal(cb, &c)
	if c.Env != "hopper" || c.Dataset != dir || c.Dataset_kind != "random" {
		t.Errorf("offline run on the Minari directory: config %s", cb)
	}
}
