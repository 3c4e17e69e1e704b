package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/train"
)

// copyHopperLong copies the hopper-long example into dir and returns its
// task file's path.
func copyHopperLong(t *testing.T, dir string) string {
	t.Helper()
	for _, f := range []string{"hopper_long.yaml", "hopper_long.xml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "hopper-long", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "hopper_long.yaml")
}

// TestTrainOnlineEnvFile: `train online --env-file` on the hopper-long
// example trains a few steps and records the file; a bad task file (unknown
// key, missing joint, MJCF that does not load) or a bad --termination is a
// usage error (exit 2) naming the problem, and leaves no run directory.
// smallOnline are the train-online flags of a run of a few seconds.
var smallOnline = []string{"--steps", "60", "--warmup", "60", "--model-every", "50", "--rollout-batch", "50", "--eval-every", "120",
	"--eval-episodes", "1", "--checkpoint-every", "120", "--hidden", "16,16", "--adm-hidden", "16", "--model-max-epochs", "2",
	"--updates-per-step", "1", "--batch", "16"}

// onlineConfig reads config.json of the online run in out: parsed and as
// written.
func onlineConfig(t *testing.T, out string) (train.OnlineConfig, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg train.OnlineConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg, b
}

func TestTrainOnlineEnvFile(t *testing.T) {
	tmp := t.TempDir()
	path := copyHopperLong(t, tmp)
	out := filepath.Join(tmp, "run")
	if err := trainOnline(append([]string{"--env-file", path, "--out", out}, smallOnline...)); err != nil {
		t.Fatal(err)
	}
	cfg, b := onlineConfig(t, out)
	task, err := envs.LoadTaskFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Env != "hopper-long" || cfg.EnvFile != task.File || cfg.EnvDigest != task.Digest || cfg.Termination != "task" {
		t.Fatalf("config.json: env %q file %q sha %q termination %q", cfg.Env, cfg.EnvFile, cfg.EnvDigest, cfg.Termination)
	}
	if _, err := os.Stat(filepath.Join(out, "policy.onnx")); err != nil {
		t.Fatal(err)
	}
	// eval --run plays the run's policy in the task file it records.
	if err := runEval([]string{"--run", out, "--episodes", "1", "--runtime", "go"}); err != nil {
		t.Fatal(err)
	}
	// The run's config.json re-runs it (--config), task file included.
	cfgPath := filepath.Join(tmp, "config.json")
	os.WriteFile(cfgPath, b, 0o644)
	if err := trainOnline([]string{"--config", cfgPath, "--out", filepath.Join(tmp, "again"), "--dry-run"}); err != nil {
		t.Fatal(err)
	}

	y, _ := os.ReadFile(path)
	xml, _ := os.ReadFile(filepath.Join(tmp, "hopper_long.xml"))
	// A changed model: neither eval nor resume plays it.
	os.WriteFile(filepath.Join(tmp, "hopper_long.xml"), []byte(strings.Replace(string(xml), `size="0.04 0.35"`, `size="0.04 0.3"`, 1)), 0o644)
	if err := runEval([]string{"--run", out, "--episodes", "1", "--runtime", "go"}); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("eval after the model changed: %v", err)
	}
	if err := trainOnline([]string{"--resume", out, "--steps", "80"}); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("resume after the model changed: %v", err)
	}
	os.WriteFile(filepath.Join(tmp, "hopper_long.xml"), xml, 0o644)
	for _, c := range []struct {
		name, yaml, xml string
		args            []string
		want            []string
	}{
		{"unknown key", string(y) + "frameskip: 4\n", "", nil, []string{`unknown key "frameskip"`, "line 25"}},
		{"missing joint", strings.Replace(string(y), "joint: rooty", "joint: hip", 1), "", nil, []string{`no joint "hip"`}},
		{"missing body", strings.Replace(string(y), "of: root}", "of: body:pelvis}", 1), "", nil, []string{`no body "pelvis"`}},
		{"MJCF does not load", "", strings.Replace(string(xml), "<actuator>", "<actuator><bogus/>", 1), nil,
			[]string{"loading MuJoCo model", "hopper_long.xml", "bogus"}},
		{"bad termination", "", "", []string{"--termination", "sometimes"}, []string{`--termination "sometimes"`}},
		{"task and file", "", "", []string{"--env", "hopper"}, []string{"--env and --env-file"}},
	} {
		dir := t.TempDir()
		p := copyHopperLong(t, dir)
		if c.yaml != "" {
			os.WriteFile(p, []byte(c.yaml), 0o644)
		}
		if c.xml != "" {
			os.WriteFile(filepath.Join(dir, "hopper_long.xml"), []byte(c.xml), 0o644)
		}
		run := filepath.Join(dir, "run")
		err := trainOnline(append([]string{"--env-file", p, "--out", run}, append(c.args, smallOnline...)...))
		if err == nil || !errors.Is(err, errUsage) || exitCode(err) != 2 {
			t.Fatalf("%s: error %v (exit %d), want a usage error", c.name, err, exitCode(err))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", c.name, err, w)
			}
		}
		if _, serr := os.Stat(run); serr == nil {
			t.Errorf("%s: a run directory was made", c.name)
		}
	}
}
