package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/policies"
)

// TestExportOfflineRunCommand: `admpo export` turns an offline run (ADMPO-OFF
// on a random hopper data set, trained here in-process) into a bundle
// labelled admpo-off / offline with a U^ADM calibration, and `admpo eval`
// plays it; export of a directory that is no run fails cleanly.
func TestExportOfflineRunCommand(t *testing.T) {
	ortskip.IfMissing(t)
	bin := buildBinary(t)
	tmp := t.TempDir()
	data := trainfix.RandomHopperFile(t, 1200)
	c := trainfix.TinyOfflineConfig(t, "admpo", "random", data)
	c.Epochs = 1
	run := filepath.Join(tmp, "run")
	trainfix.RunOfflineToEnd(t, c, run)
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
