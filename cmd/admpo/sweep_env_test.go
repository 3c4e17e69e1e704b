package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
)

// TestSweepTaskFileAndRemote runs sweeps with the binary over a task file
// (envs/tasks/inverted-pendulum.yaml: SAC and ADMPO) and over a remote
// environment (the Go server helper serving inverted-pendulum on a Unix
// socket: two seeds, run directories named after the address). Each run's
// config.json records how to reach its env as a single run's does (the task
// file's path and SHA-256; the address, the server's spec and
// --env-timeout). A sweep whose server is down fails naming the address and
// writes nothing; a rerun resumes a run whose final policy is gone.
// --resume with --env-timeout replaces a remote run's recorded timeout and
// is a usage error for a task-file run, which it leaves as it was.
func TestSweepTaskFileAndRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds admpo and trains")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	taskPath, err := filepath.Abs(filepath.Join("..", "..", "envs", "tasks", "inverted-pendulum.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := envs.LoadTaskFile(taskPath)
	if err != nil {
		t.Fatal(err)
	}
	small := strings.Join(smallOnline, " ")

	fileOut := filepath.Join(tmp, "file")
	r := runBin(t, bin, nil, "sweep", "--grid", "algo=sac,admpo", "--cmd", "train online --env-file "+taskPath+" "+small, "--out", fileOut)
	if r.code != 0 || !strings.Contains(r.stdout, "sweep: 2 finished, 0 skipped") {
		t.Fatalf("task-file sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, algo := range []string{"sac", "admpo"} {
		run := filepath.Join(fileOut, "algo="+algo)
		cfg, _ := onlineConfig(t, run)
		if cfg.Algo != algo || cfg.Env != "inverted-pendulum" || cfg.EnvFile != taskPath || cfg.EnvDigest != task.Digest || cfg.Remote != nil {
			t.Errorf("%s: config.json: algo %q env %q file %q sha %q remote %+v", run, cfg.Algo, cfg.Env, cfg.EnvFile, cfg.EnvDigest, cfg.Remote)
		}
		if !fileExists(filepath.Join(run, "policy.onnx")) {
			t.Errorf("%s has no policy.onnx", run)
		}
	}
	r = runBin(t, bin, nil, "sweep", "--grid", "algo=sac", "--cmd", "train online --env-file "+filepath.Join(tmp, "missing.yaml"), "--out", filepath.Join(tmp, "bad"))
	if r.code != 2 || !strings.Contains(r.stderr, "grid point algo=sac") || !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("a missing task file: exit %d %q", r.code, r.stderr)
	}

	sock := filepath.Join(tmp, "pendulum.sock")
	addr := "unix://" + sock
	remOut := filepath.Join(tmp, "remote")
	remCmd := "train online --env " + addr + " --algo admpo --env-timeout 20s " + small
	r = runBin(t, bin, nil, "sweep", "--grid", "seed=1,2", "--cmd", remCmd, "--out", remOut)
	if r.code != 1 || !strings.Contains(r.stderr, "no environment server at "+addr) {
		t.Fatalf("server down: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(remOut); !os.IsNotExist(err) {
		t.Fatalf("a sweep whose server is down wrote %s: %v", remOut, err)
	}
	l, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- remote.Serve(l, remote.Builtin("inverted-pendulum")) }()
	defer func() { l.Close(); <-done }()
	r = runBin(t, bin, nil, "sweep", "--grid", "seed=1,2", "--cmd", remCmd, "--out", remOut)
	if r.code != 0 || !strings.Contains(r.stdout, "sweep: 2 finished, 0 skipped") {
		t.Fatalf("remote sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, seed := range []int64{1, 2} {
		run := filepath.Join(remOut, fmt.Sprintf("seed=%d", seed))
		cfg, _ := onlineConfig(t, run)
		rem := cfg.Remote
		if cfg.Seed != seed || cfg.Env != addr || cfg.EnvFile != "" || cfg.Termination != "learned" || rem == nil ||
			rem.ObsDim != task.ObsDim || rem.ActDim != task.ActDim || rem.TimeoutS != 20 {
			t.Errorf("%s: config.json: seed %d env %q file %q termination %q remote %+v", run, cfg.Seed, cfg.Env, cfg.EnvFile, cfg.Termination, rem)
		}
	}
	run1 := filepath.Join(remOut, "seed=1")
	os.Remove(filepath.Join(run1, "policy.onnx"))
	r = runBin(t, bin, nil, "sweep", "--grid", "seed=1,2", "--cmd", remCmd, "--out", remOut)
	if r.code != 0 || !strings.Contains(r.stdout, "resumed seed=1") || !strings.Contains(r.stdout, "skipped seed=2: finished already") ||
		!fileExists(filepath.Join(run1, "policy.onnx")) {
		t.Fatalf("second remote sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(run1 + ".log"); !strings.Contains(string(b), "resuming "+run1) {
		t.Errorf("seed=1.log shows no resume:\n%s", b)
	}

	// The grid's values name the run directories: two addresses, two names.
	r = runBin(t, bin, nil, "sweep", "--grid", "env=tcp://127.0.0.1:5555,tcp://127.0.0.1:5556", "--out", filepath.Join(tmp, "names"), "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "env=remote-127.0.0.1-5555:") || !strings.Contains(r.stdout, "env=remote-127.0.0.1-5556:") {
		t.Errorf("addresses as grid values: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	// --env-timeout on --resume: a remote run takes it, a task-file run refuses it.
	r = runBin(t, bin, nil, "train", "online", "--resume", run1, "--env-timeout", "7s", "--steps", "80")
	if cfg, _ := onlineConfig(t, run1); r.code != 0 || cfg.Remote == nil || cfg.Remote.TimeoutS != 7 || cfg.Steps != 80 {
		t.Errorf("resume with --env-timeout 7s: exit %d %q; config.json remote %+v steps %d", r.code, r.stderr, cfg.Remote, cfg.Steps)
	}
	fileRun := filepath.Join(fileOut, "algo=sac")
	_, before := onlineConfig(t, fileRun)
	r = runBin(t, bin, nil, "train", "online", "--resume", fileRun, "--env-timeout", "7s")
	if _, after := onlineConfig(t, fileRun); r.code != 2 || !strings.Contains(r.stderr, "--env-timeout") ||
		!strings.Contains(r.stderr, "no remote environment") || string(after) != string(before) {
		t.Errorf("task-file run resumed with --env-timeout: exit %d %q (config.json changed: %v)", r.code, r.stderr, string(after) != string(before))
	}
}
