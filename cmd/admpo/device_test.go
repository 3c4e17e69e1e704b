package main

import (
	"encoding/json"
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

// TestResumeOnAnotherDevice: --device may come with --resume: an emu run
// goes on on the CPU (config.json then names cpu); an unknown device is a
// usage error that leaves the run as it was.
func TestResumeOnAnotherDevice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run := []string{"--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20",
		"--device", "emu", "--out", dir}
	if _, err := captureStdout(t, func() error { return trainOnline(run) }); err != nil {
		t.Fatal(err)
	}
	device := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var c train.OnlineConfig
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c.Device
	}
	if d := device(); d != "emu" {
		t.Fatalf("config.json names device %q, want emu", d)
	}
	_, err := captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "30", "--device", "bogus"}) })
	wantUsage(t, "--resume --device bogus", err, "", "--device", "unknown device")
	if d := device(); d != "emu" {
		t.Fatalf("after a refused resume config.json names device %q", d)
	}
	if _, err := captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "30", "--device", "cpu"}) }); err != nil {
		t.Fatal(err)
	}
	if d := device(); d != "cpu" {
		t.Errorf("after --resume --device cpu config.json names device %q", d)
	}
}

// TestBenchTrainDevice: bench train --device emu adds the device's rows
// (SAC update, ADM and ensemble train steps) beside the CPU's; an unknown
// device is a usage error.
func TestBenchTrainDevice(t *testing.T) {
	out, err := captureStdout(t, func() error {
		return runBench([]string{"train", "--no-torch", "--iters", "1", "--device", "emu", "--json"})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SAC update total", "SAC update total on emu", "SAC update on emu as a run does it",
		"ADM train step on emu (batch on the device)", "ADM train step on emu as a fit does it",
		"ADM train step on emu, one device graph per step", "ensemble train step on emu (7x 4x200",
		"ensemble train step on emu as a fit does it", "ensemble train step on emu, one device graph per step"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench train --device emu prints no %q row:\n%s", want, out)
		}
	}
	wantUsage(t, "bench train --device bogus", runBench([]string{"train", "--device", "bogus"}), "", "--device", "unknown device")
}
