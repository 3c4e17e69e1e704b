package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/experiments"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/trainfix"
)

// TestTrainOnlineDiagnose: `admpo train online --diagnose` writes a tiny
// ADMPO-ON run's diagnosis.json (diagnosis-with-NAME.json with another
// policy) with the starts asked for; a run it cannot diagnose (none there,
// a sac run) and bad flags (negative starts, --diagnose-* without
// --diagnose, a training flag beside it) exit 2 and write nothing;
// --diagnose-no-dropout writes diagnosis-nodropout.json (the same as the
// default for this run without rollout dropout), and train offline's
// --diagnose-no-dropout without --diagnose is a usage error too.
func TestTrainOnlineDiagnose(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	run := filepath.Join(tmp, "hopper", "admpo-0")
	cfg := trainfix.TinyOnlineConfig(t, "admpo")
	cfg.Termination = "none" // every roll-out runs its 3 steps
	trainfix.RunOnlineTo(t, cfg, run, cfg.TotalSteps())
	sac := filepath.Join(tmp, "sac")
	trainfix.RunOnlineTo(t, trainfix.TinyOnlineConfig(t, "sac"), sac, 20)

	if err := trainOnline([]string{"--diagnose", run, "--diagnose-starts", "40", "--seed", "3"}); err != nil {
		t.Fatal(err)
	}
	var d experiments.Diagnosis
	b, err := os.ReadFile(filepath.Join(run, "diagnosis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Transitions != 40*3 || d.Algo != "admpo" || d.Policy != "own" || len(d.PerK) != cfg.M {
		t.Errorf("diagnosis.json: %d transitions (want 120), algo %q, policy %q, %d k groups", d.Transitions, d.Algo, d.Policy, len(d.PerK))
	}
	if err := trainOnline([]string{"--diagnose", run, "--diagnose-starts", "40", "--diagnose-policy", run,
		"--diagnose-buffer", run}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "diagnosis-with-hopper-admpo-0.json")); err != nil {
		t.Errorf("the diagnosis with a named policy: %v", err)
	}
	// Without dropout: its own file; this run has none to turn off.
	if err := trainOnline([]string{"--diagnose", run, "--diagnose-starts", "40", "--seed", "3", "--diagnose-no-dropout"}); err != nil {
		t.Fatal(err)
	}
	var nd experiments.Diagnosis
	if b, err = os.ReadFile(filepath.Join(run, "diagnosis-nodropout.json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &nd); err != nil {
		t.Fatal(err)
	}
	if nd.Dropout || nd.Transitions != 40*3 || nd.ErrMean != d.ErrMean || !(nd.MeanErrMean > 0) {
		t.Errorf("diagnosis-nodropout.json: dropout %v, %d transitions, error %v (with the run's own dropout setting %v), mean error %v",
			nd.Dropout, nd.Transitions, nd.ErrMean, d.ErrMean, nd.MeanErrMean)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"sac run", []string{"--diagnose", sac}, "has no model to diagnose"},
		{"missing dir", []string{"--diagnose", filepath.Join(tmp, "nothing")}, "not a run directory"},
		{"negative starts", []string{"--diagnose", run, "--diagnose-starts", "-5"}, "diagnose-starts"},
		{"zero starts", []string{"--diagnose", run, "--diagnose-starts", "0"}, "diagnose-starts"},
		{"buffer of no run", []string{"--diagnose", run, "--diagnose-buffer", filepath.Join(tmp, "nothing")}, "not a run directory"},
		{"policy of no run", []string{"--diagnose", run, "--diagnose-policy", filepath.Join(tmp, "none.onnx")}, "none.onnx"},
		{"without --diagnose", []string{"--diagnose-buffer", run}, "needs --diagnose"},
		{"no dropout without --diagnose", []string{"--diagnose-no-dropout"}, "--diagnose-no-dropout needs --diagnose"},
		{"no dropout with a value", []string{"--diagnose", run, "--diagnose-no-dropout=maybe"}, "diagnose-no-dropout"},
		{"with a training flag", []string{"--diagnose", run, "--steps", "10"}, "--steps cannot be given with --diagnose"},
		{"empty", []string{"--diagnose", ""}, "needs a run directory"},
	} {
		err := trainOnline(c.args)
		if !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (exit %d), want a usage error (exit 2) containing %q", c.name, err, exitCode(err), c.want)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no dropout without --diagnose", []string{"--diagnose-no-dropout", "--dataset", "x.hdf5"}, "--diagnose-no-dropout needs --diagnose"},
		{"policy without --diagnose", []string{"--diagnose-policy", run, "--dataset", "x.hdf5"}, "--diagnose-policy needs --diagnose"},
		{"episodes without --diagnose", []string{"--diagnose-episodes", "3", "--dataset", "x.hdf5"}, "--diagnose-episodes needs --diagnose"},
		{"with a training flag", []string{"--diagnose", run, "--epochs", "3"}, "--epochs cannot be given with --diagnose (only --diagnose-starts, --diagnose-episodes, --diagnose-policy, --diagnose-no-dropout and --seed may)"},
		{"empty", []string{"--diagnose", ""}, "needs a run directory"},
	} {
		err := trainOffline(c.args)
		if !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("train offline, %s: %v (exit %d), want a usage error (exit 2) containing %q", c.name, err, exitCode(err), c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(sac, "diagnosis.json")); err == nil {
		t.Errorf("a refused diagnosis wrote diagnosis.json")
	}
	if _, err := os.Stat(filepath.Join(tmp, "nothing")); err == nil {
		t.Errorf("a diagnosis of a missing directory made it")
	}
}
