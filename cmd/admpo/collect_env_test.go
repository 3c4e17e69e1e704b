package main

import (
	"encoding/csv"
	"encoding/json"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/train"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if m := df.Meta; m["env"] != "hopper-long" || m["env_file"] != file || m["env_file_sha256"] != task.Digest ||
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
		{"timeout for a task", []string{"--env", "hopper", "--env-timeout", "5s"}, true, []string{"--env-timeout", "not an address"}},
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
	_, err = captureStdout(t, func() error {
		return runExperiment([]string{"uncertainty", "--dataset", aliasData, "--out", filepath.Join(tmp, "u.png")})
	})
	wantUsage(t, "experiment on task-file data", err, "", "collected in the task file "+alias, "built-in tasks only")
	cfg, _, note, err := offlineConfig(offlineChoice{dataset: aliasData, preset: "quick", algo: "admpo"})
	if err != nil || cfg.Env != "" || cfg.Termination != "learned" && cfg.Termination != "none" || !strings.Contains(note, "--env-file "+alias) {
		t.Errorf("train offline on the alias data: env %q termination %q, note %q, %v (want no built-in task)", cfg.Env, cfg.Termination, note, err)
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

// TestOfflineEnvFile: train offline --env-file evaluates a task file's data
// in that task: config.json records the file and its digest, the
// evaluations have returns but no D4RL score even for a task file named
// like a built-in task (whose score would be computed for hopper's
// references), the export's bundle plays the task file, and the
// diagnosis replays the model in it. --env-file with --env, data of other
// sizes, --termination task for a rule the observation cannot decide, and
// a resume after the task file changed are refused.
func TestOfflineEnvFile(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	long := copyHopperLong(t, tmp)
	b, err := os.ReadFile(long)
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(tmp, "alias.yaml") // hopper-long named hopper
	if err := os.WriteFile(alias, []byte(strings.Replace(string(b), "name: hopper-long", "name: hopper", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := envs.LoadTaskFile(alias)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "alias.hdf5")
	if _, err := captureStdout(t, func() error {
		return runCollect([]string{"--env-file", alias, "--size", "2000", "--out", data})
	}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(tmp, "run")
	small := []string{"--epochs", "2", "--steps-per-epoch", "5", "--rollout-every", "5", "--rollout-batch", "20", "--horizon", "2",
		"--model-max-epochs", "2", "--adm-hidden", "8", "--adm-layers", "1", "--adm-res-blocks", "1", "--hidden", "16,16",
		"--eval-episodes", "2", "--preset", "quick"}
	out, err := captureStdout(t, func() error {
		return trainOffline(append([]string{"--dataset", data, "--env-file", alias, "--algo", "admpo", "--out", run}, small...))
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := onlineConfig(t, run) // the env keys are the same
	if cfg.Env != "hopper" || cfg.EnvFile != task.File || cfg.EnvDigest != task.Digest || !strings.Contains(out, `"termination": "task"`) {
		t.Fatalf("config.json: env %q file %q digest %q\n%s", cfg.Env, cfg.EnvFile, cfg.EnvDigest, out)
	}
	rows := readCSV(t, filepath.Join(run, "offline.csv"))
	if len(rows) != 2 {
		t.Fatalf("offline.csv: %d rows, want 2 epochs", len(rows))
	}
	for _, r := range rows {
		if r["score_mean"] != "" && r["score_mean"] != "NaN" || r["return_mean"] == "" || r["return_mean"] == "NaN" {
			t.Fatalf("offline.csv row %v: want a return and no score", r)
		}
	}
	if _, err := captureStdout(t, func() error {
		return trainOffline([]string{"--diagnose", run, "--diagnose-starts", "20", "--diagnose-episodes", "0"})
	}); err != nil {
		t.Fatalf("diagnosis in the task file: %v", err)
	}
	bundle := filepath.Join(tmp, "bundle")
	if _, err := captureStdout(t, func() error {
		return runExport([]string{"--run", run, "--out", bundle, "--calibration-samples", "20"})
	}); err != nil {
		t.Fatal(err)
	}
	evalOut, err := captureStdout(t, func() error { return runEval([]string{"--bundle", bundle, "--episodes", "1"}) })
	if err != nil || !strings.HasPrefix(evalOut, "hopper, ") {
		t.Fatalf("eval of the bundle: %q %v", evalOut, err)
	}

	// Refusals.
	none := filepath.Join(tmp, "none")
	hidden := filepath.Join(tmp, "hidden.yaml") // a rule on the x position, which the observation leaves out
	if err := os.WriteFile(hidden, []byte(strings.Replace(string(b), "    - {joint: rootz, above: 0.9}",
		"    - {joint: rootz, above: 0.9}\n    - {joint: rootx, below: 1000}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ipData := filepath.Join(tmp, "ip.hdf5")
	if _, err := captureStdout(t, func() error {
		return runCollect([]string{"--env", "inverted-pendulum", "--size", "200", "--out", ipData})
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		parts []string
	}{
		{"with --env", []string{"--dataset", data, "--env-file", alias, "--env", "hopper"}, []string{"--env-file", "--env"}},
		{"other sizes", []string{"--dataset", ipData, "--env-file", alias}, []string{"4 observation and 1 action values", "hopper has 11 and 3"}},
		{"task rule hidden", []string{"--dataset", data, "--env-file", hidden, "--termination", "task"}, []string{"--termination task", "no termination rule on observations", "learned or none"}},
	} {
		_, err := captureStdout(t, func() error { return trainOffline(append(c.args, "--out", none)) })
		wantUsage(t, c.name, err, none, c.parts...)
	}
	if err := os.WriteFile(filepath.Join(tmp, "hopper_long.xml"), []byte(strings.Replace(readFile(t, filepath.Join(tmp, "hopper_long.xml")), "<mujoco", "<!-- changed -->\n<mujoco", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := captureStdout(t, func() error { return trainOffline([]string{"--resume", run, "--epochs", "3"}) }); err == nil ||
		!strings.Contains(err.Error(), "changed since the run started") {
		t.Fatalf("resume after the model changed: %v", err)
	}
}

// readCSV reads a CSV file with a header into one map per row.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v (%d lines)", path, err, len(recs))
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, k := range recs[0] {
			m[k] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// readFile is a file's content (the test fails without it).
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCollectProgressLines: a progress line every 10 s of the clock (rate
// and ETA from the start), and the last row's line only after an earlier
// one (a short collection prints none).
func TestCollectProgressLines(t *testing.T) {
	defer func(c func() time.Time) { clock = c }(clock)
	t0 := time.Unix(1000, 0)
	now := t0
	clock = func() time.Time { return now }
	run := func(steps map[int]time.Duration, rows ...int) string {
		now = t0
		opt := collectOptions(2, 100)
		out, _ := captureStdout(t, func() error {
			for _, r := range rows {
				now = t0.Add(steps[r])
				opt.Progress(r)
			}
			return nil
		})
		return out
	}
	if out := run(map[int]time.Duration{50: 2 * time.Second, 100: 4 * time.Second}, 50, 100); out != "" {
		t.Errorf("a 4 s collection printed %q", out)
	}
	got := run(map[int]time.Duration{10: 5 * time.Second, 20: 20 * time.Second, 60: 25 * time.Second, 100: 26 * time.Second}, 10, 20, 60, 100)
	want := "  20/100 transitions (1/s, ETA 1m20s)\n  100/100 transitions (4/s, ETA 0s)\n"
	if got != want {
		t.Errorf("progress lines %q, want %q", got, want)
	}
}

// TestOfflineEvalRemote: train offline --eval-env ADDRESS evaluates in a
// remote environment: BC on the same data evaluated in the built-in hopper
// and in hopper served by the Go server gives the same returns epoch by
// epoch (no D4RL score for the address); config.json records the server's
// spec; the bundle plays the address; the run has no task to diagnose in
// (no simulator); --termination task and --env-timeout without an address are
// usage errors; with the server down a resume fails naming it, and once a
// server is back the run finishes.
func TestOfflineEvalRemote(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	if _, err := captureStdout(t, func() error {
		return runCollect([]string{"--env", "hopper", "--size", "1500", "--out", data})
	}); err != nil {
		t.Fatal(err)
	}
	hopper, err := envs.Lookup("hopper")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(tmp, "env.sock")
	addr := "unix://" + sock
	l, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- remote.Serve(l, remote.Task(hopper)) }()
	small := []string{"--dataset", data, "--algo", "bc", "--epochs", "2", "--steps-per-epoch", "20", "--batch", "8",
		"--hidden", "8,8", "--eval-episodes", "2", "--checkpoint-every", "20"}
	trainOff := func(args ...string) error {
		_, err := captureStdout(t, func() error { return trainOffline(append(append([]string(nil), small...), args...)) })
		return err
	}
	local, far := filepath.Join(tmp, "local"), filepath.Join(tmp, "far")
	if err := trainOff("--eval-env", "hopper", "--out", local); err != nil {
		t.Fatal(err)
	}
	if err := trainOff("--eval-env", addr, "--epochs", "1", "--out", far); err != nil {
		t.Fatal(err)
	}
	l.Close()
	<-done
	cfg, _ := onlineConfig(t, far)
	if cfg.Env != addr || cfg.Remote == nil || cfg.Remote.ObsDim != 11 || cfg.Remote.ActDim != 3 || cfg.Remote.MaxEpisodeSteps != 1000 {
		t.Fatalf("config.json: env %q remote %+v", cfg.Env, cfg.Remote)
	}
	_, err = captureStdout(t, func() error { return trainOffline([]string{"--resume", far, "--epochs", "2"}) })
	if err == nil || !strings.Contains(err.Error(), "no environment server at "+addr) {
		t.Fatalf("resume with the server down: %v", err)
	}
	l2, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- remote.Serve(l2, remote.Task(hopper)) }()
	defer func() { l2.Close(); <-done }()
	if _, err := captureStdout(t, func() error { return trainOffline([]string{"--resume", far, "--epochs", "2"}) }); err != nil {
		t.Fatalf("resume with the server back: %v", err)
	}
	lr, fr := readCSV(t, filepath.Join(local, "offline.csv")), readCSV(t, filepath.Join(far, "offline.csv"))
	if len(lr) != 2 || len(fr) != 2 {
		t.Fatalf("offline.csv rows: %d local, %d remote", len(lr), len(fr))
	}
	for i := range lr {
		if lr[i]["return_mean"] != fr[i]["return_mean"] || lr[i]["return_mean"] == "" || lr[i]["score_mean"] == "" ||
			fr[i]["score_mean"] != "" && fr[i]["score_mean"] != "NaN" {
			t.Errorf("epoch %d: local return %s score %s, remote return %s score %s", i+1,
				lr[i]["return_mean"], lr[i]["score_mean"], fr[i]["return_mean"], fr[i]["score_mean"])
		}
	}
	bundle := filepath.Join(tmp, "bundle")
	if _, err := captureStdout(t, func() error {
		return runExport([]string{"--run", far, "--out", bundle})
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := captureStdout(t, func() error { return runEval([]string{"--bundle", bundle, "--episodes", "1"}) }); err != nil ||
		!strings.HasPrefix(out, addr+", ") {
		t.Fatalf("eval of the bundle: %q %v", out, err)
	}
	var offCfg train.OfflineConfig // what --diagnose asks for its simulator
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(far, "config.json"))), &offCfg); err != nil {
		t.Fatal(err)
	}
	if _, err := offCfg.Task(); err == nil || !strings.Contains(err.Error(), "remote environment "+addr) {
		t.Errorf("the task of a remote run: %v", err)
	}
	none := filepath.Join(tmp, "none")
	for _, c := range []struct {
		name  string
		args  []string
		parts []string
	}{
		{"task rule", []string{"--eval-env", addr, "--termination", "task"}, []string{"--termination task", "no termination rule on observations"}},
		{"timeout without an address", []string{"--eval-env", "hopper", "--env-timeout", "5s"}, []string{"--env-timeout", "--eval-env ADDRESS"}},
	} {
		wantUsage(t, c.name, trainOff(append(c.args, "--out", none)...), none, c.parts...)
	}
}
