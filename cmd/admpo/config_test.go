package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// tinyOnline is a seconds-long online run's flags.
var tinyOnline = []string{"--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
	"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20",
	"--seed", "5", "--tensorboard=false"}

// asYAML rewrites a JSON file as YAML (block style) in dir.
func asYAML(t *testing.T, jsonPath, dir string) string {
	t.Helper()
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "{") {
		t.Fatalf("want block-style YAML, got %s", y)
	}
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, y, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// trainedConfig runs train (trainOnline, trainOffline) with args, which
// put the run in dir, and returns the path and content of its config.json.
func trainedConfig(t *testing.T, train func([]string) error, args []string, dir string) (string, []byte) {
	t.Helper()
	if _, err := captureStdout(t, func() error { return train(args) }); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// checkDryRun fails unless train --config path --dry-run prints want (a
// run's config.json); what names the case.
func checkDryRun(t *testing.T, train func([]string) error, path string, want []byte, what string) {
	t.Helper()
	got, err := captureStdout(t, func() error { return train([]string{"--config", path, "--dry-run"}) })
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s --dry-run:\n%s\nwant the run's config.json:\n%s", what, got, want)
	}
}

// TestConfigFileRerunsOnlineRun: a run's config.json given as --config (as
// JSON, and rewritten as YAML) resolves to that same config.json, with a
// preset and seed other than the defaults; a flag given beside it wins.
func TestConfigFileRerunsOnlineRun(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	args := append(append([]string{}, tinyOnline...), "--env", "inverted-pendulum", "--rollout-schedule", "0->10:1->3",
		"--auto-alpha=false", "--out", dir)
	cfgPath, want := trainedConfig(t, trainOnline, args, dir)
	for _, p := range []string{cfgPath, asYAML(t, cfgPath, tmp)} {
		checkDryRun(t, trainOnline, p, want, "--config "+filepath.Base(p))
	}
	// A version 1 config.json (before the fidelity keys): absent keys mean
	// what they mean when such a run is resumed.
	// The paper preset, whose values of these keys differ from version 1's.
	paper, err := captureStdout(t, func() error {
		return trainOnline([]string{"--env", "walker2d", "--preset", "paper", "--dry-run"})
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal([]byte(paper), &m)
	m["config_version"], m["steps"] = 1, 205000 // version 1 steps count the warm-up
	for _, k := range []string{"actor_every", "alpha", "auto_alpha", "model_epoch_passes", "model_improve"} {
		delete(m, k)
	}
	v1, _ := json.Marshal(m)
	v1Path := filepath.Join(tmp, "v1.json")
	os.WriteFile(v1Path, v1, 0o644)
	var legacy train.OnlineConfig
	if err := json.Unmarshal(v1, &legacy); err != nil {
		t.Fatal(err)
	}
	got, err := captureStdout(t, func() error { return trainOnline([]string{"--config", v1Path, "--dry-run"}) })
	if err != nil {
		t.Fatal(err)
	}
	if got != string(legacy.JSON()) || legacy.Alpha != 0.2 || legacy.ActorEvery != 1 {
		t.Errorf("version 1 file:\n%s\nwant it as a resume reads it:\n%s", got, legacy.JSON())
	}

	out, err := captureStdout(t, func() error {
		return trainOnline([]string{"--config", cfgPath, "--batch", "24", "--seed", "9", "--dry-run"})
	})
	if err != nil {
		t.Fatal(err)
	}
	var c train.OnlineConfig
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Batch != 24 || c.Seed != 9 || c.Env != "inverted-pendulum" || c.Steps != 20 || c.AutoAlpha || c.Rollout.To != 3 {
		t.Errorf("flags over the file: batch %d seed %d env %s steps %d auto_alpha %v schedule %v; want 24, 9, the file's others",
			c.Batch, c.Seed, c.Env, c.Steps, c.AutoAlpha, c.Rollout)
	}
}

// TestConfigFileYAMLValuesAndPresetFromFile: a hand-written YAML file sets
// a few keys over the preset it names; the rest are the preset's.
func TestConfigFileYAMLValuesAndPresetFromFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("# a comment\nenv: walker2d\nalgo: mbpo\npreset: paper\nbatch: 128\nlr: 1e-3\nhidden: [64, 32]\n"+
		"rollout_schedule:\n  a: 0\n  b: 100\n  from: 1\n  to: 4\n"), 0o644)
	out, err := captureStdout(t, func() error { return trainOnline([]string{"--config", p, "--dry-run"}) })
	if err != nil {
		t.Fatal(err)
	}
	var c train.OnlineConfig
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	want, err := train.Preset("paper", "walker2d", "mbpo", 6)
	if err != nil {
		t.Fatal(err)
	}
	want.Batch, want.LR, want.Hidden, want.Rollout = 128, 1e-3, []int{64, 32}, train.Schedule{A: 0, B: 100, From: 1, To: 4}
	if string(c.JSON()) != string(want.JSON()) {
		t.Errorf("resolved config:\n%s\nwant the paper preset with the file's four keys:\n%s", c.JSON(), want.JSON())
	}
}

// TestConfigFileErrors: an unknown key (top-level or nested), a value of
// the wrong type, YAML that does not parse and a missing file are usage
// errors (exit 2) naming the key or the problem, and make no run directory.
func TestConfigFileErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"unknown.yaml", "env: hopper\nbatch_size: 64\n", `unknown key "batch_size"`},
		{"unknown-nested.yaml", "rollout_schedule: {a: 1, b: 2, from: 1, to: 2, length: 3}\n", `unknown key "length"`},
		{"type.yaml", "batch: lots\n", `key "batch": want int`},
		{"float-for-int.json", `{"batch": 1.5}`, `key "batch": want int`},
		{"nested-type.yaml", "rollout_schedule: {a: x}\n", `key "rollout_schedule.a"`},
		{"string-type.yaml", "env: [hopper]\n", `key "env": want a string`},
		{"bad-yaml.yaml", "env: hopper\n  batch: [1\n", "not valid YAML"},
		{"bad-json.json", `{"env": "hopper",}`, "not valid JSON"},
		{"two-values.json", `{"env": "hopper"} {}`, "not valid JSON"},
		{"not-a-mapping.yml", "- env\n", "want a mapping"},
		{"duplicate.json", `{"env": "hopper", "batch": 64, "batch": 128}`, `key "batch" appears twice`},
		{"duplicate-nested.json", `{"rollout_schedule": {"a": 1, "b": 2, "a": 3, "from": 1, "to": 2}}`, `key "rollout_schedule"."a" appears twice`},
		{"duplicate.yaml", "batch: 64\nbatch: 128\n", `"batch" already defined`},
	} {
		p := filepath.Join(tmp, c.name)
		os.WriteFile(p, []byte(c.body), 0o644)
		out := filepath.Join(tmp, "run-"+c.name)
		// --dry-run: a file wrongly accepted must not start a run.
		_, err := captureStdout(t, func() error { return trainOnline([]string{"--config", p, "--out", out, "--dry-run"}) })
		if !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (exit %d), want a usage error containing %s", c.name, err, exitCode(err), c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: a run directory was made", c.name)
		}
	}
	err := trainOnline([]string{"--config", filepath.Join(tmp, "missing.yaml")})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(tmp, "off.yaml")
	os.WriteFile(p, []byte("dataset: x.hdf5\nhorizon_length: 5\n"), 0o644)
	if err := trainOffline([]string{"--config", p, "--dry-run"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `"horizon_length"`) {
		t.Errorf("offline unknown key: %v", err)
	}
}

// TestConfigFileRerunsOfflineRun: offline runs' config.json (data that
// name no task, with the action range from the data; and the same data
// evaluated in hopper) fed back as --config resolve to the same config;
// --dataset replaces the file's data keys.
func TestConfigFileRerunsOfflineRun(t *testing.T) {
	tmp := t.TempDir()
	d := trainfix.RandomHopper(t, 300, 1)
	d.Meta = nil
	data := filepath.Join(tmp, "mydata.hdf5")
	trainfix.WriteD4RL(t, data, d)
	tiny := []string{"--dataset", data, "--algo", "bc", "--epochs", "1", "--steps-per-epoch", "20", "--batch", "8", "--hidden", "8,8",
		"--eval-episodes", "1", "--checkpoint-every", "20", "--seed", "4", "--tensorboard=false"}
	for _, c := range []struct {
		name  string
		extra []string
	}{{"no-task", nil}, {"eval-env", []string{"--eval-env", "hopper"}}} {
		dir := filepath.Join(tmp, c.name)
		args := append(append(append([]string{}, tiny...), c.extra...), "--out", dir)
		cfgPath, want := trainedConfig(t, trainOffline, args, dir)
		checkDryRun(t, trainOffline, cfgPath, want, c.name+": --config")
	}
	// --dataset beside the file: the data keys come from the new data.
	d2 := *d
	d2.Meta = map[string]string{"env": "hopper", "kind": "random"}
	other := filepath.Join(tmp, "hopper-random.hdf5")
	if err := datasets.WriteD4RL(other, &d2); err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error {
		return trainOffline([]string{"--config", filepath.Join(tmp, "no-task", "config.json"), "--dataset", other, "--dry-run"})
	})
	if err != nil {
		t.Fatal(err)
	}
	var c train.OfflineConfig
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Dataset != other || c.Name != "hopper-random" || c.Env != "hopper" || c.ActionLow != nil || c.Seed != 4 || c.Batch != 8 {
		t.Errorf("--dataset over the file: dataset %s name %s env %q action_low %v seed %d batch %d", c.Dataset, c.Name, c.Env, c.ActionLow, c.Seed, c.Batch)
	}
}
