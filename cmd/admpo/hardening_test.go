package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// wantUsage fails unless err is a usage error (exit 2) whose message holds
// every part, and out (a run directory; "" for none) does not exist.
func wantUsage(t *testing.T, what string, err error, out string, parts ...string) {
	t.Helper()
	if !errors.Is(err, errUsage) || exitCode(err) != 2 {
		t.Errorf("%s: %v (exit %d), want a usage error (exit 2)", what, err, exitCode(err))
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %q does not name %q", what, err, p)
		}
	}
	if out != "" {
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: the run directory %s was made", what, out)
		}
	}
}

// TestProviderValidatedUpFront: an unknown --provider (or a --config's
// provider key) is a usage error of train online and offline, with and
// without --dry-run, before any run directory exists; cpu and cuda (any
// case) pass the check.
func TestProviderValidatedUpFront(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	conf := filepath.Join(tmp, "provider.yaml")
	if err := os.WriteFile(conf, []byte("provider: bogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func([]string) error
		args []string
	}{
		{"online", trainOnline, []string{"--provider", "bogus"}},
		{"online dry run", trainOnline, []string{"--provider", "bogus", "--dry-run"}},
		{"online config", trainOnline, []string{"--config", conf}},
		{"offline", trainOffline, []string{"--dataset", data, "--provider", "bogus"}},
		{"offline dry run", trainOffline, []string{"--dataset", data, "--provider=bogus", "--dry-run"}},
		{"offline config", trainOffline, []string{"--dataset", data, "--config", conf}},
	} {
		out := filepath.Join(tmp, "run-"+strings.ReplaceAll(c.name, " ", "-"))
		short := []string{"--epochs", "1", "--steps-per-epoch", "1"} // were the run to start
		if strings.HasPrefix(c.name, "online") {
			short = []string{"--steps", "1", "--warmup", "1"}
		}
		_, err := captureStdout(t, func() error { return c.run(append(append(c.args, short...), "--out", out)) })
		wantUsage(t, c.name, err, out, `provider "bogus"`, "cpu or cuda")
	}
	for _, p := range []string{"cpu", "CUDA"} {
		if _, err := captureStdout(t, func() error { return trainOnline([]string{"--provider", p, "--dry-run"}) }); err != nil {
			t.Errorf("--provider %s --dry-run: %v", p, err)
		}
	}
	wantUsage(t, "bench rollout", runBench([]string{"rollout", "--provider", "bogus"}), "", "--provider", `"bogus"`)
}

// TestBenchRolloutSplitFlags: bench rollout's --workers and --batch-rows
// (the engines' split, which the GPU check sweeps) refuse negative values
// before any model is built.
func TestBenchRolloutSplitFlags(t *testing.T) {
	for _, f := range []string{"--workers", "--batch-rows"} {
		wantUsage(t, "bench rollout "+f, runBench([]string{"rollout", f, "-1"}), "", f)
	}
}

// TestDuplicateKey checks the JSON duplicate-key finder on nested objects
// and arrays, against paths written by hand.
func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": 1, "a": 1}`, `"a"`},
		{`{"a": {"b": 1}, "b": {"b": 2}}`, ""},
		{`{"a": {"b": 1, "c": [1, {"b": 0}], "b": 2}}`, `"a"."b"`},
		{`{"x": [{"a": 1}, {"a": 2, "a": 3}]}`, `"x"[1]."a"`},
		{`[{"a": 1}, [{"k": 1, "k": 2}]]`, `[1][0]."k"`},
		{`{"s": "a", "t": "a", "u": ["a", "a"]}`, ""},
		{`{"e": {}, "f": [], "e": 1}`, `"e"`},
		{`3`, ""},
	} {
		if got := duplicateKey([]byte(c.doc)); got != c.want {
			t.Errorf("duplicateKey(%s) = %s, want %s", c.doc, got, c.want)
		}
	}
}

// TestUsageErrorsExit2: serve's --runtime and --addr and envs run's --env
// are usage errors (exit 2), checked before the bundle or task is opened,
// as eval's --runtime is.
func TestUsageErrorsExit2(t *testing.T) {
	tmp := t.TempDir() // no bundle in it: the flags must be refused first
	wantUsage(t, "serve --runtime bogus", runServe([]string{"--bundle", tmp, "--runtime", "bogus"}), "", `--runtime "bogus"`, "ort or go")
	wantUsage(t, "eval --runtime bogus", runEval([]string{"--bundle", tmp, "--runtime", "bogus"}), "", `--runtime "bogus"`, "ort or go")
	wantUsage(t, "serve --addr bogus", runServe([]string{"--bundle", tmp, "--addr", "bogus"}), "", `--addr "bogus"`, "HOST:PORT")
	wantUsage(t, "envs run --env bogus", runEnvs([]string{"run", "--env", "bogus"}), "", `unknown task "bogus"`)
}

// TestFIFOFlagsRefused: a FIFO given as --config, --token-file,
// --admin-token-file or --tls-cert/--tls-key is a usage error naming it,
// not a read that blocks until something writes to the pipe.
func TestFIFOFlagsRefused(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"train online --config", func() error { return trainOnline([]string{"--config", fifo, "--dry-run"}) }},
		{"train offline --config", func() error { return trainOffline([]string{"--config", fifo, "--dry-run"}) }},
		{"serve --token-file", func() error { return runServe([]string{"--bundle", tmp, "--token-file", fifo}) }},
		{"serve --admin-token-file", func() error { return runServe([]string{"--bundle", tmp, "--admin-token-file", fifo}) }},
		{"serve --tls-cert", func() error { return runServe([]string{"--bundle", tmp, "--tls-cert", fifo, "--tls-key", fifo}) }},
	} {
		done := make(chan error, 1)
		go func() { done <- c.run() }()
		select {
		case err := <-done:
			wantUsage(t, c.name, err, "", fifo, "not a regular file")
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // release the blocked reader
			}
			t.Errorf("%s: still blocked on the FIFO after 10 s", c.name)
		}
	}
}

// TestAlphaOneKey: --alpha is config.json's "alpha" online and offline, so
// one --config file sets it for both; an offline config.json written with
// the old "init_alpha" still re-runs, and a file with both names is a
// usage error. The flag-to-key tables of both commands (each checked
// against the code by the overrides tests) give every flag the two share
// one key.
func TestAlphaOneKey(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	alpha := func(what string, run func() error) float64 {
		t.Helper()
		out, err := captureStdout(t, run)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if _, old := c["init_alpha"]; old {
			t.Errorf("%s: config.json still writes init_alpha", what)
		}
		a, _ := c["alpha"].(float64)
		return a
	}
	for _, name := range []string{"alpha.json", "alpha.yaml"} {
		body := `{"alpha": 0.37}`
		if strings.HasSuffix(name, ".yaml") {
			body = "alpha: 0.37\n"
		}
		p := write(name, body)
		if a := alpha("online "+name, func() error { return trainOnline([]string{"--config", p, "--dry-run"}) }); a != 0.37 {
			t.Errorf("online --config %s: alpha %v, want 0.37", name, a)
		}
		if a := alpha("offline "+name, func() error {
			return trainOffline([]string{"--config", p, "--dataset", data, "--dry-run"})
		}); a != 0.37 {
			t.Errorf("offline --config %s: alpha %v, want 0.37", name, a)
		}
	}
	// An offline config.json from before the rename (docs/results' hopper-medium ADMPO run, alpha 0.05).
	old := filepath.Join("..", "..", "train", "testdata", "config-golden", "old", "results-offline-hopper-medium-admpo-0.json")
	if a := alpha("old offline config.json", func() error {
		return trainOffline([]string{"--config", old, "--dataset", data, "--dry-run"})
	}); a != 0.05 {
		t.Errorf("old config.json with init_alpha 0.05: alpha %v", a)
	}
	both := write("both.json", `{"alpha": 0.3, "init_alpha": 0.3}`)
	wantUsage(t, "online, both names", trainOnline([]string{"--config", both, "--dry-run"}), "", `"alpha"`, `"init_alpha"`)
	wantUsage(t, "offline, both names", trainOffline([]string{"--config", both, "--dataset", data, "--dry-run"}), "", `"alpha"`, `"init_alpha"`)
	offline := map[string]string{}
	for flag, key := range offlineWant {
		offline[flag] = key
	}
	shared := 0
	for flag, key := range onlineWant {
		if k, ok := offline[flag]; ok {
			shared++
			if k != key {
				t.Errorf("--%s is %q online but %q offline", flag, key, k)
			}
		}
	}
	if shared < 20 {
		t.Errorf("only %d flags shared by train online and offline", shared)
	}
}

// TestShippedPoliciesFound: collect finds the shipped policies from the
// binary's checkout when run elsewhere, and says where it looked when
// there are none; a --policies folder that does not exist (or a file) is
// named as such instead of "no policy is shipped".
func TestShippedPoliciesFound(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "checkout")
	ship := filepath.Join(repo, "datasets", "behaviour")
	if err := os.MkdirAll(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ship, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ship, "manifest.json"), []byte(`{"policies": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(tmp, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	defer func(e func() (string, error)) { executable = e }(executable)

	executable = func() (string, error) { return filepath.Join(repo, "bin", "admpo"), nil }
	if got, err := shippedDir("", false); err != nil || got != ship {
		t.Errorf("binary in %s/bin, run from %s: %q, %v; want %s", repo, elsewhere, got, err, ship)
	}
	executable = func() (string, error) { return filepath.Join(repo, "admpo"), nil }
	if got, err := shippedDir("", false); err != nil || got != ship {
		t.Errorf("binary in %s: %q, %v; want %s", repo, got, err, ship)
	}
	executable = func() (string, error) { return filepath.Join(tmp, "go", "bin", "admpo"), nil }
	err := runCollect([]string{"--env", "hopper", "--kind", "medium", "--size", "10", "--out", filepath.Join(tmp, "x.hdf5")})
	if err == nil || !strings.Contains(err.Error(), "no shipped behaviour policies found") ||
		!strings.Contains(err.Error(), filepath.Join(elsewhere, "datasets", "behaviour")) ||
		!strings.Contains(err.Error(), filepath.Join(tmp, "go", "bin", "datasets", "behaviour")) {
		t.Errorf("no shipped policies anywhere: %v, want the places looked at", err)
	}
	for _, c := range []struct{ dir, want string }{
		{"/nonexistent", "--policies /nonexistent: the folder does not exist"},
		{filepath.Join(ship, "manifest.json"), "is not a folder"},
	} {
		err := runCollect([]string{"--env", "hopper", "--kind", "medium", "--size", "10", "--policies", c.dir, "--out", filepath.Join(tmp, "y.hdf5")})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--policies %s: %v, want %q", c.dir, err, c.want)
		}
	}
	// A folder without a manifest says what is missing where.
	err = runCollect([]string{"--env", "hopper", "--kind", "medium", "--size", "10", "--policies", elsewhere, "--out", filepath.Join(tmp, "z.hdf5")})
	if err == nil || !strings.Contains(err.Error(), "no hopper-medium policy is shipped in "+elsewhere) {
		t.Errorf("--policies without a manifest: %v", err)
	}
}

// TestMemoryEstimateRefusesWhatCannotFit: with 16 GiB of memory, sizes that
// cannot fit are usage errors before any run directory exists, naming the
// flag and the estimate (at least the bytes counted here by hand), while
// every preset of every task and algorithm (offline: on a data set of
// D4RL's largest size, 2M transitions) fits; thread counts above the CPUs
// are refused.
func TestMemoryEstimateRefusesWhatCannotFit(t *testing.T) {
	defer func(f func() (int64, string)) { machineMemory = f }(machineMemory)
	const mem = 16 << 30
	machineMemory = func() (int64, string) { return mem, "the test's memory" }
	total := func(parts []train.MemoryPart) (s float64) {
		for _, p := range parts {
			s += p.Bytes
		}
		return s
	}
	for _, preset := range []string{"paper", "cpu", "quick"} {
		for _, env := range envs.Names() {
			task, _ := envs.Lookup(env)
			for _, algo := range train.Algos {
				c, err := train.Preset(preset, env, algo, task.ActDim)
				if err != nil {
					continue
				}
				if b := total(c.MemoryParts(task.ObsDim, task.ActDim)); b > mem/2 {
					t.Errorf("online %s %s %s: estimate %s, more than half of 16 GiB", preset, env, algo, gib(b))
				}
			}
			for _, kind := range train.DatasetKinds {
				for _, algo := range train.OfflineAlgos {
					c, err := train.OfflinePreset(preset, env, kind, algo, task.ActDim)
					if err != nil {
						continue
					}
					if b := total(c.MemoryParts(task.ObsDim, task.ActDim, 2_000_000)); b > mem/2 {
						t.Errorf("offline %s %s-%s %s: estimate %s, more than half of 16 GiB", preset, env, kind, algo, gib(b))
					}
				}
			}
		}
	}

	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	const huge = "1000000000"
	for _, c := range []struct {
		name     string
		run      func([]string) error
		args     []string
		flag     string
		atLeastB float64 // bytes the estimate must reach, counted here
	}{
		{"hidden", trainOnline, []string{"--hidden", "100000,100000"}, "--hidden", 3 * 1e10 * 4}, // three nets' middle layers
		{"m", trainOnline, []string{"--m", huge}, "--m", 256 * 1e9 * 4},
		{"batch", trainOnline, []string{"--batch", huge}, "--batch", 1e9 * 256 * 4},
		{"adm-hidden", trainOnline, []string{"--adm-hidden", "1000000"}, "--adm-hidden", 1e12 * 4},
		{"rollout-batch", trainOnline, []string{"--rollout-batch", huge}, "--rollout-batch", 1e9 * 4},
		{"model-retain", trainOnline, []string{"--model-retain", huge}, "--model-retain", 1e9 * 25 * 4},
		{"ensemble", trainOnline, []string{"--algo", "mbpo", "--ensemble", "10000000"}, "--ensemble", 1e7 * 200 * 200 * 4},
		{"steps", trainOnline, []string{"--steps", huge}, "--steps", 1e9 * 25 * 4},
		{"offline horizon", trainOffline, []string{"--dataset", data, "--horizon", "100000"}, "--horizon", 1e5 * 1000 * 25 * 4},
		{"offline hidden", trainOffline, []string{"--dataset", data, "--hidden", "100000,100000"}, "--hidden", 3 * 1e10 * 4},
	} {
		for _, dry := range []bool{true, false} {
			out := filepath.Join(tmp, "run-"+c.name)
			args := append(append([]string{}, c.args...), "--out", out)
			if dry {
				args = append(args, "--dry-run")
			}
			_, err := captureStdout(t, func() error { return c.run(args) })
			wantUsage(t, c.name, err, out, "usage: "+c.flag+": the run needs at least", "GiB of memory", "more than the 16.0 GiB of the test's memory")
			if err == nil {
				continue
			}
			i := strings.Index(err.Error(), "needs at least ")
			gb, perr := strconv.ParseFloat(strings.Fields(err.Error()[i+len("needs at least "):])[0], 64)
			if perr != nil || gb*(1<<30) < c.atLeastB*0.999 {
				t.Errorf("%s: estimate %q, want at least %s", c.name, err, gib(c.atLeastB))
			}
		}
	}
	for _, flag := range []string{"--threads", "--blas-threads"} {
		n := strconv.Itoa(runtime.NumCPU() + 1)
		wantUsage(t, flag, trainOnline([]string{flag, n, "--dry-run"}), "", flag+" "+n, "CPUs")
		wantUsage(t, flag, trainOffline([]string{"--dataset", data, flag, huge, "--dry-run"}), "", flag+" "+huge, "CPUs")
	}
	if _, err := captureStdout(t, func() error {
		return trainOnline([]string{"--blas-threads", strconv.Itoa(runtime.NumCPU()), "--dry-run"})
	}); err != nil {
		t.Errorf("--blas-threads NumCPU: %v", err)
	}
}

// TestResumeLongerChecksMemory: --resume --steps that would grow the real
// replay buffer beyond the memory is refused like a new run's size, and the
// run is left as it was.
func TestResumeLongerChecksMemory(t *testing.T) {
	defer func(f func() (int64, string)) { machineMemory = f }(machineMemory)
	machineMemory = func() (int64, string) { return 16 << 30, "the test's memory" }
	dir := filepath.Join(t.TempDir(), "run")
	run := []string{"--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20", "--out", dir}
	if _, err := captureStdout(t, func() error { return trainOnline(run) }); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "1000000000"}) })
	wantUsage(t, "resume --steps 1e9", err, "", "usage: --steps: the run needs at least", "more than the 16.0 GiB")
	if after, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(after) != string(before) {
		t.Errorf("the refused resume changed config.json:\n%s", after)
	}
}

// TestMSweepChecksMemory: experiment m-sweep refuses sizes that cannot fit
// (its --m list's largest value included) before running anything.
func TestMSweepChecksMemory(t *testing.T) {
	defer func(f func() (int64, string)) { machineMemory = f }(machineMemory)
	machineMemory = func() (int64, string) { return 16 << 30, "the test's memory" }
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--horizon", "100000"}, "--horizon"},
		{[]string{"--m", "1,1000000000"}, "--m"},
	} {
		out := filepath.Join(tmp, "sweep")
		args := append([]string{"m-sweep", "--dataset", data, "--env", "hopper", "--kind", "random", "--out", out}, c.args...)
		_, err := captureStdout(t, func() error { return runExperiment(args) })
		wantUsage(t, "m-sweep "+strings.Join(c.args, " "), err, out, "usage: "+c.flag+": the run needs at least")
	}
}

// TestFIFODataRefused: a FIFO as train offline's --dataset or convert's
// --in is an error naming it, not a hang, and makes no run directory.
func TestFIFODataRefused(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "hopper-medium.hdf5")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	out := filepath.Join(tmp, "run")
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"train offline --dataset", func() error { return trainOffline([]string{"--dataset", fifo, "--out", out}) }},
		{"convert --in", func() error { return runConvert([]string{"--in", fifo, "--out", out}) }},
	} {
		done := make(chan error, 1)
		go func() { done <- c.run() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s FIFO: %v, want an error naming it as not a regular file", c.name, err)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("%s FIFO: %s was made", c.name, out)
			}
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Errorf("%s FIFO: still blocked after 10 s", c.name)
		}
	}
}
