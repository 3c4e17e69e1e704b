package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/train"
)

// TestExportOfflineRunCommand: `admpo export` turns an offline run (ADMPO-OFF
// on a random hopper data set, trained here in-process) into a bundle
// labelled admpo-off / offline with a U^ADM calibration, and `admpo eval`
// plays it; export of a directory that is no run fails cleanly.
func TestExportOfflineRunCommand(t *testing.T) {
	ortskip.IfMissing(t)
	bin := buildBinary(t)
	tmp := t.TempDir()
	d, _, err := collect.Dataset("hopper", 1200, 3, 0, collect.SharedActor(envs.UniformActor{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "hopper-random.hdf5")
	if err := datasets.WriteD4RL(data, d); err != nil {
		t.Fatal(err)
	}
	c, err := train.OfflinePreset("quick", "hopper", "random", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Dataset = data
	c.Epochs, c.StepsPerEpoch, c.CheckpointEvery, c.EvalEpisodes = 1, 100, 100, 1
	c.Batch, c.Hidden = 32, []int{32, 32}
	c.RolloutEvery, c.RolloutBatch, c.Horizon, c.ModelRetain = 50, 64, 2, 2
	c.M, c.ADMHidden, c.ADMLayers, c.ADMResBlocks, c.ModelMaxEpochs, c.ModelPatience = 2, 16, 1, 1, 2, 2
	run := filepath.Join(tmp, "run")
	o, err := train.NewOffline(c, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Close()
	out := filepath.Join(tmp, "bundle")
	r := runBin(t, bin, nil, "export", "--run", run, "--out", out, "--calibration-samples", "200")
	if r.code != 0 || !strings.Contains(r.stdout, "offline admpo-off run") || !strings.Contains(r.stdout, data) {
		t.Fatalf("export: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mj, err := os.ReadFile(filepath.Join(out, policies.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m policies.Manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		t.Fatal(err)
	}
	if m.Algorithm != "admpo-off" || m.RunKind != policies.RunOffline || m.Task != "hopper" || m.Calibration == nil || m.Provenance["dataset"] != data {
		t.Fatalf("manifest %s", mj)
	}
	played := runBin(t, bin, nil, "eval", "--bundle", out, "--episodes", "1", "--runtime", "go")
	if played.code != 0 || !strings.Contains(played.stdout, "hopper, runtime go") {
		t.Fatalf("eval of the exported bundle: exit %d %q %q", played.code, played.stdout, played.stderr)
	}
	// eval --run plays the same policy as the exported bundle.
	if r := runBin(t, bin, nil, "eval", "--run", run, "--episodes", "1", "--runtime", "go"); r.code != 0 || r.stdout != played.stdout {
		t.Fatalf("eval --run: exit %d %q %q, want the bundle's %q", r.code, r.stdout, r.stderr, played.stdout)
	}
	for _, args := range [][]string{{"eval"}, {"eval", "--run", run, "--bundle", out}} {
		if r := runBin(t, bin, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "one of --bundle and --run") {
			t.Fatalf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
	if r := runBin(t, bin, nil, "export", "--run", tmp, "--out", filepath.Join(tmp, "b2")); r.code != 1 || !strings.Contains(r.stderr, "not a run directory") {
		t.Fatalf("export of a non-run: exit %d %q", r.code, r.stderr)
	}
}
