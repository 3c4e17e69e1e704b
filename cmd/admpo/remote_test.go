package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/pyserver"
)

// TestRemoteEnvCommands follows the README's remote environment section
// with the binary: a pure-Python environment served by python3 -m
// admpo_env, ADMPO-ON trained on it, exported, the bundle evaluated
// against the same server and served over HTTP; a server that is down fails cleanly with no run
// directory.
func TestRemoteEnvCommands(t *testing.T) {
	ortskip.IfMissing(t)
	s := pyserver.Start(t, "admpo_env.examples:PointMass", nil)
	bin := buildBinary(t)
	tmp := t.TempDir()
	run := filepath.Join(tmp, "run")
	r := runBin(t, bin, nil, "train", "online", "--env", s.Addr, "--algo", "admpo", "--steps", "200", "--warmup", "200",
		"--updates-per-step", "1", "--hidden", "32,32", "--model-every", "100", "--rollout-batch", "100", "--adm-hidden", "16",
		"--eval-every", "200", "--eval-episodes", "2", "--checkpoint-every", "200", "--env-timeout", "20s", "--out", run)
	if r.code != 0 || !strings.Contains(r.stdout, `"env": "`+s.Addr+`"`) || !strings.Contains(r.stdout, `"timeout_s": 20`) ||
		!strings.Contains(r.stdout, "termination") {
		t.Fatalf("train: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(tmp, "bundle")
	if r := runBin(t, bin, nil, "export", "--run", run, "--out", out, "--calibration-samples", "50"); r.code != 0 {
		t.Fatalf("export: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, bin, nil, "eval", "--bundle", out, "--episodes", "2", "--runtime", "go")
	if r.code != 0 || !strings.HasPrefix(r.stdout, s.Addr+", runtime go, 2 deterministic episodes") {
		t.Fatalf("eval: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	_, line := startServe(t, bin, "--runtime", "go", "--bundle", out, "--addr", "127.0.0.1:0")
	resp, err := http.Post(line[strings.Index(line, " on http://")+4:]+"/v1/act", "application/json", strings.NewReader(`{"obs":[0.5,0]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "action") {
		t.Fatalf("serve /v1/act: %d %s", resp.StatusCode, body)
	}
	if r := runBin(t, bin, nil, "envs", "run", "--env", s.Addr, "--episodes", "1"); r.code != 0 || !strings.Contains(r.stdout, "env steps/s") {
		t.Fatalf("envs run: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	s.Kill()
	down := filepath.Join(tmp, "down")
	r = runBin(t, bin, nil, "train", "online", "--env", s.Addr, "--out", down)
	if r.code != 1 || !strings.Contains(r.stderr, "no environment server at "+s.Addr) {
		t.Fatalf("server down: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(down); !os.IsNotExist(err) {
		t.Fatalf("run directory left behind: %v", err)
	}
	r = runBin(t, bin, nil, "eval", "--bundle", out, "--episodes", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "no environment server at "+s.Addr) {
		t.Fatalf("eval with the server down: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, bin, nil, "train", "online", "--env", "hopper", "--env-timeout", "5s", "--dry-run"); r.code != 2 ||
		!strings.Contains(r.stderr, "not an address") {
		t.Fatalf("--env-timeout with a task: exit %d %q", r.code, r.stderr)
	}
}

func TestEnvRunName(t *testing.T) {
	for in, want := range map[string]string{"hopper": "hopper", "tcp://127.0.0.1:5555": "remote-127.0.0.1-5555",
		"unix:///tmp/robot.sock": "remote-robot", "tcp://[::1]:80": "remote---1-80"} {
		if got := envRunName(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
