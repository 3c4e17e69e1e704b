package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
)

// TestEnvChoiceIsExclusive: a run plays one of a built-in task, a task file
// and a remote environment; giving two (by flags or by a config file), a
// termination rule a remote environment cannot have, or --env-timeout
// without a remote environment is a usage error (exit 2) that makes no run
// directory, checked before any server is dialled.
func TestEnvChoiceIsExclusive(t *testing.T) {
	tmp := t.TempDir()
	path := copyHopperLong(t, tmp)
	addr := "unix://" + filepath.Join(tmp, "nobody.sock") // no server: a usage error must come first
	both := filepath.Join(tmp, "both.yaml")
	os.WriteFile(both, []byte("env: "+addr+"\nenv_file: "+path+"\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"address and file", []string{"--env", addr, "--env-file", path}, "--env and --env-file"},
		{"config with address and file", []string{"--config", both}, "give one"},
		{"remote with termination task", []string{"--env", addr, "--termination", "task"}, "use --termination learned or none"},
		{"file with env-timeout", []string{"--env-file", path, "--env-timeout", "5s"}, "not an address"},
	} {
		run := filepath.Join(t.TempDir(), "run")
		err := trainOnline(append(c.args, "--out", run))
		if err == nil || !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("train online %s: %v (exit %d), want a usage error naming %q", c.name, err, exitCode(err), c.want)
		}
		if _, serr := os.Stat(run); serr == nil {
			t.Errorf("%s: a run directory was made", c.name)
		}
	}
	for _, args := range [][]string{{"run", "--env", addr, "--env-file", path}, {"serve", "--env", "hopper", "--env-file", path},
		{"serve", "--env", "nope"}, {"serve", "--env-file", filepath.Join(tmp, "missing.yaml")}, {"serve", "--copies", "0"}} {
		if err := runEnvs(args); exitCode(err) != 2 {
			t.Errorf("envs %s: %v (exit %d), want exit 2", strings.Join(args, " "), err, exitCode(err))
		}
	}
}

// TestTaskFileServedRemotely: a task file served by the Go server helper
// (what `admpo envs serve --env-file` serves) trains as a remote
// environment: config.json records the address, the server's spec (the task
// file's episode limit included) and the learned termination rule, and no
// task file.
func TestTaskFileServedRemotely(t *testing.T) {
	tmp := t.TempDir()
	task, err := envs.LoadTaskFile(copyHopperLong(t, tmp))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTask(t, task, filepath.Join(tmp, "env.sock"))
	out := filepath.Join(tmp, "run")
	if err := trainOnline(append([]string{"--env", addr, "--out", out}, smallOnline...)); err != nil {
		t.Fatal(err)
	}
	cfg, _ := onlineConfig(t, out)
	r := cfg.Remote
	if cfg.Env != addr || cfg.EnvFile != "" || cfg.Termination != "learned" || r == nil || r.ObsDim != task.ObsDim ||
		r.ActDim != task.ActDim || r.MaxEpisodeSteps != task.EpisodeLimit() {
		t.Fatalf("config.json: env %q file %q termination %q remote %+v", cfg.Env, cfg.EnvFile, cfg.Termination, r)
	}
}

// serveTask serves task (remote.Task) on a Unix socket at sock until the
// test ends and returns its address.
func serveTask(t *testing.T, task *envs.Task, sock string) string {
	t.Helper()
	addr := "unix://" + sock
	l, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- remote.Serve(l, remote.Task(task)) }()
	t.Cleanup(func() { l.Close(); <-done })
	return addr
}
