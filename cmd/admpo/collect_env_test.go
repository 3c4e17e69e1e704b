package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/ortskip"
)

// TestCollectOwnEnvs: admpo collect plays a task file's task and a remote
// environment. The same seed gives bit-identical transitions through the
// task file (2 workers) and through a server of that task file (1 worker:
// the remote default), and other data than the built-in hopper (the longer
// leg is used); the metadata name the file and its digest and give no D4RL
// score; a remote environment's data hold no simulator state. An online
// run in the task file's task is a --policy for the medium kind; its
// policy is refused for a task of other sizes. Shipped policies and
// behaviour runs (built-in tasks only), --env with --env-file, and a
// server that is down are errors that write nothing. Data of a task file
// named like a built-in task train offline as data that name no task.
func TestCollectOwnEnvs(t *testing.T) {
	tmp := t.TempDir()
	file := copyHopperLong(t, tmp)
	task, err := envs.LoadTaskFile(file)
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) *datasets.Dataset {
		t.Helper()
		d, err := datasets.ReadD4RL(path)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	collectTo := func(path string, args ...string) error {
		_, err := captureStdout(t, func() error { return runCollect(append(args, "--out", path)) })
		return err
	}

	viaFile := filepath.Join(tmp, "file.hdf5")
	if err := collectTo(viaFile, "--env-file", file, "--size", "2500", "--seed", "3", "--workers", "2"); err != nil {
		t.Fatal(err)
	}
	df := read(viaFile)
	if m := df.Meta; m["env"] != "hopper-long" || m["env_file"] != file || m["env_digest"] != task.Digest ||
		m["name"] != "hopper-long-random" || m["data_score"] != "" || m["data_return"] == "" {
		t.Errorf("metadata of the task file's data: %v", m)
	}
	if df.QPosDim != 6 || len(df.QPos) != df.N*6 {
		t.Errorf("task file data: qpos %d wide, %d values for %d rows", df.QPosDim, len(df.QPos), df.N)
	}

	addr := serveTask(t, task, filepath.Join(tmp, "env.sock"))
	viaServer := filepath.Join(tmp, "remote.hdf5")
	if err := collectTo(viaServer, "--env", addr, "--size", "2500", "--seed", "3"); err != nil {
		t.Fatal(err)
	}
	dr := read(viaServer)
	sameTransitions(t, "task file vs its server", df, dr)
	if dr.QPos != nil || dr.QVel != nil || dr.Meta["env"] != addr || dr.Meta["name"] != "remote-env-random" {
		t.Errorf("remote data: qpos %d values, qvel %d, metadata %v", len(dr.QPos), len(dr.QVel), dr.Meta)
	}

	viaBuiltin := filepath.Join(tmp, "hopper.hdf5")
	if err := collectTo(viaBuiltin, "--env", "hopper", "--size", "2500", "--seed", "3", "--workers", "2"); err != nil {
		t.Fatal(err)
	}
	if db := read(viaBuiltin); bitexact.Equal(db.NextObs, df.NextObs) || db.Meta["data_score"] == "" {
		t.Errorf("the built-in hopper's data: same next observations as hopper-long's %v, score %q", bitexact.Equal(db.NextObs, df.NextObs), db.Meta["data_score"])
	}

	// Errors that write nothing.
	none := filepath.Join(tmp, "none.hdf5")
	for _, c := range []struct {
		name  string
		args  []string
		usage bool
		parts []string
	}{
		{"env and env-file", []string{"--env", "hopper", "--env-file", file}, true, []string{"--env and --env-file"}},
		{"no shipped policy", []string{"--env-file", file, "--kind", "medium"}, true, []string{"built-in tasks only", "--policy RUN", "--env-file " + file}},
		{"no behaviour run", []string{"--env", addr, "--kind", "expert", "--train-steps", "100"}, true, []string{"--train-*", "built-in tasks only", "--env " + addr}},
		{"server down", []string{"--env", "unix://" + filepath.Join(tmp, "nobody.sock")}, false, []string{"nobody.sock"}},
	} {
		err := collectTo(none, c.args...)
		if c.usage {
			wantUsage(t, c.name, err, "", c.parts...)
		} else if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), c.parts[0]) {
			t.Errorf("%s: %v (exit %d), want an error naming %q", c.name, err, exitCode(err), c.parts[0])
		}
		if _, err := os.Stat(none); err == nil {
			t.Fatalf("%s: wrote %s", c.name, none)
		}
	}

	// A named-like-hopper task file's data are not hopper's.
	alias := filepath.Join(tmp, "alias.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alias, []byte(strings.Replace(string(b), "name: hopper-long", "name: hopper", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	aliasData := filepath.Join(tmp, "alias.hdf5")
	if err := collectTo(aliasData, "--env-file", alias, "--size", "300"); err != nil {
		t.Fatal(err)
	}
	if m := read(aliasData).Meta; m["env"] != "hopper" || m["data_score"] != "" {
		t.Errorf("alias metadata: %v", m)
	}
	cfg, _, err := offlineConfig(aliasData, "", "", "", "", "quick", "admpo")
	if err != nil || cfg.Env != "" || cfg.Termination != "learned" && cfg.Termination != "none" {
		t.Errorf("train offline on the alias data: env %q termination %q, %v (want no built-in task)", cfg.Env, cfg.Termination, err)
	}

	// Policies from an online run in the task file's task.
	ortskip.IfMissing(t)
	run := filepath.Join(tmp, "run")
	if err := trainOnline(append([]string{"--env-file", file, "--algo", "sac", "--out", run}, smallOnline...)); err != nil {
		t.Fatal(err)
	}
	medium := filepath.Join(tmp, "medium.hdf5")
	if err := collectTo(medium, "--env-file", file, "--kind", "medium", "--policy", run, "--size", "300", "--eval-episodes", "1"); err != nil {
		t.Fatal(err)
	}
	if m := read(medium).Meta; !strings.Contains(m["policy"], run) || m["policy_sha256"] == "" || m["kind"] != "medium" {
		t.Errorf("medium data from an online run: metadata %v", m)
	}
	err = collectTo(none, "--env", "inverted-pendulum", "--kind", "medium", "--policy", run, "--size", "300", "--eval-episodes", "1")
	if err == nil || !strings.Contains(err.Error(), "acts on 11 observation values with 3 actions, inverted-pendulum has 4 and 1") {
		t.Errorf("a policy of other sizes: %v", err)
	}
	if _, err := os.Stat(none); err == nil {
		t.Fatalf("a policy of other sizes: wrote %s", none)
	}
}
