package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/trainfix"
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
