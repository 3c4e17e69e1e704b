package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// TestDeviceValidatedUpFront: an unknown --device (or a --config's device
// key) is a usage error of train online and offline before any run
// directory exists, as is cuda in a binary without the admpo_cuda tag
// (naming the tag); cpu and emu pass.
func TestDeviceValidatedUpFront(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	conf := filepath.Join(tmp, "device.yaml")
	if err := os.WriteFile(conf, []byte("device: bogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func([]string) error
		args []string
	}{
		{"online", trainOnline, []string{"--device", "bogus"}},
		{"online dry run", trainOnline, []string{"--device", "tpu", "--dry-run"}},
		{"online config", trainOnline, []string{"--config", conf}},
		{"offline", trainOffline, []string{"--dataset", data, "--device", "bogus"}},
		{"offline config", trainOffline, []string{"--dataset", data, "--config", conf}},
	} {
		out := filepath.Join(tmp, "run-"+strings.ReplaceAll(c.name, " ", "-"))
		short := []string{"--epochs", "1", "--steps-per-epoch", "1"}
		if strings.HasPrefix(c.name, "online") {
			short = []string{"--steps", "1", "--warmup", "1"}
		}
		_, err := captureStdout(t, func() error { return c.run(append(append(c.args, short...), "--out", out)) })
		wantUsage(t, c.name, err, out, "unknown device", "cpu, emu or cuda")
	}
	for _, d := range []string{"cpu", "emu", "EMU"} {
		if _, err := captureStdout(t, func() error { return trainOnline([]string{"--device", d, "--dry-run"}) }); err != nil {
			t.Errorf("--device %s --dry-run: %v", d, err)
		}
	}
	if !train.CUDABuilt {
		out := filepath.Join(tmp, "run-cuda")
		_, err := captureStdout(t, func() error {
			return trainOnline([]string{"--device", "cuda", "--steps", "1", "--warmup", "1", "--out", out})
		})
		wantUsage(t, "online cuda", err, out, "device cuda", "admpo_cuda")
	}
}
