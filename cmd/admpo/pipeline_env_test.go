package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/admpo/admpo/envs/remote"
)

// countedEnv counts the steps its server has answered (over all
// connections).
type countedEnv struct {
	remote.Env
	n *atomic.Int64
}

func (c countedEnv) Step(a []float64) ([]float64, float64, bool, bool, error) {
	c.n.Add(1)
	return c.Env.Step(a)
}

// TestPipelineTaskFileAndRemote runs the quick pipeline on a task file and
// on a remote environment (the Go server helper serving
// inverted-pendulum): the run records the task file or the address, the
// training's env steps and the evaluations reach the server, and the
// bundle's evaluation on the go runtime (on the server's env copies at
// once for the remote env) returns what `admpo eval --env-copies 1` returns
// for the same bundle and seeds; eval uses the copies the server offers. --env with --env-file, --env-timeout
// without a remote environment, and --steps too short for the warm-up are
// usage errors that create nothing.
func TestPipelineTaskFileAndRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds admpo and trains")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	taskPath, err := filepath.Abs(filepath.Join("..", "..", "envs", "tasks", "inverted-pendulum.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var steps atomic.Int64
	addr := "unix://" + filepath.Join(tmp, "env.sock")
	l, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	base := remote.Builtin("inverted-pendulum")
	go func() {
		done <- remote.ServeCopies(l, func() (remote.Env, error) {
			e, err := base()
			return countedEnv{Env: e, n: &steps}, err
		}, 4)
	}()
	defer func() { l.Close(); <-done }()

	goReturn := regexp.MustCompile(`runtime go : mean return (\S+)`)
	for _, c := range []struct {
		name string
		args []string
	}{{"file", []string{"--env-file", taskPath}}, {"remote", []string{"--env", addr, "--env-timeout", "20s"}}} {
		out := filepath.Join(tmp, c.name)
		r := runBin(t, bin, nil, append([]string{"pipeline", "--steps", "300", "--rollout-rows", "200", "--episodes", "2", "--out", out}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", c.name, r.code, r.stdout, r.stderr)
		}
		cfg, _ := onlineConfig(t, filepath.Join(out, "run"))
		switch c.name {
		case "file":
			if cfg.EnvFile != taskPath || cfg.Remote != nil {
				t.Errorf("file: config.json env file %q remote %+v", cfg.EnvFile, cfg.Remote)
			}
		case "remote":
			if cfg.Env != addr || cfg.Remote == nil || cfg.Remote.TimeoutS != 20 || cfg.Termination != "learned" {
				t.Errorf("remote: config.json env %q remote %+v termination %q", cfg.Env, cfg.Remote, cfg.Termination)
			}
			// 300 training steps, the run's evaluations and the 2x2 pipeline episodes.
			if n := steps.Load(); n < 300+4 {
				t.Errorf("the server answered %d steps, fewer than the training's 300 and the evaluations'", n)
			}
			var m struct{ Task string }
			if b, err := os.ReadFile(filepath.Join(out, "bundle", "manifest.json")); err != nil || json.Unmarshal(b, &m) != nil || m.Task != addr {
				t.Errorf("the bundle's task is %q, want the address (%v)", m.Task, err)
			}
		}
		// The pipeline's evaluation of a remote env ran its 2 episodes on 2 copies at once; eval with
		// --env-copies 1 plays them one at a time: the same episodes.
		got := goReturn.FindStringSubmatch(r.stdout)
		e := runBin(t, bin, nil, "eval", "--bundle", filepath.Join(out, "bundle"), "--episodes", "2", "--seed", "1000", "--runtime", "go", "--env-copies", "1")
		if got == nil || e.code != 0 || !strings.Contains(e.stdout, "return "+got[1]+" ±") || !strings.Contains(e.stderr, "env steps/s") ||
			strings.Contains(e.stderr, "copies at once") {
			t.Errorf("%s: the pipeline's go-runtime return %v; admpo eval: exit %d %q %q", c.name, got, e.code, e.stdout, e.stderr)
		}
		if c.name == "remote" {
			e := runBin(t, bin, nil, "eval", "--bundle", filepath.Join(out, "bundle"), "--episodes", "3", "--runtime", "go")
			if e.code != 0 || !strings.Contains(e.stderr, "(3 env copies at once)") {
				t.Errorf("eval on a server with 4 copies: exit %d %q %q", e.code, e.stdout, e.stderr)
			}
			if e := runBin(t, bin, nil, "eval", "--bundle", filepath.Join(out, "bundle"), "--env-copies", "-1"); e.code != 2 {
				t.Errorf("--env-copies -1: exit %d %q", e.code, e.stderr)
			}
		}
	}
	for _, args := range [][]string{{"--env", addr, "--env-file", taskPath}, {"--env-file", taskPath, "--env-timeout", "5s"}, {"--steps", "4"}} {
		out := filepath.Join(tmp, "bad")
		r := runBin(t, bin, nil, append([]string{"pipeline", "--out", out}, args...)...)
		if r.code != 2 {
			t.Errorf("pipeline %s: exit %d %q, want 2", strings.Join(args, " "), r.code, r.stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("pipeline %s made %s", strings.Join(args, " "), out)
		}
	}
}
