package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/sac"
	"github.com/admpo/admpo/train"
)

// TestDeviceValidatedUpFront: an unknown --device (or a --config's device
// key) is a usage error of train online and offline before any run
// directory exists, as is cuda in a binary without the admpo_cuda tag
// (naming the tag); cpu and emu pass.
func TestDeviceValidatedUpFront(t *testing.T) {
	tmp, data, conf := deviceFixture(t, "device: bogus\n")
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
		return runConfig(t, dir).Device
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
	for _, want := range []string{"SAC update total", "ensemble train step (7x 4x200 Swish", "SAC update total on emu", "SAC update on emu as a run does it",
		"ADM train step on emu (batch on the device)", "ADM train step on emu as a fit does it",
		"ADM train step on emu, one device graph per step", "ensemble train step on emu (7x 4x200",
		"ensemble train step on emu as a fit does it", "ensemble train step on emu, one device graph per step"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench train --device emu prints no %q row:\n%s", want, out)
		}
	}
	wantUsage(t, "bench train --device bogus", runBench([]string{"train", "--device", "bogus"}), "", "--device", "unknown device")
}

// TestBenchTrainFrom: bench train --from times the SAC agent a run's
// checkpoint holds, at that agent's sizes (read from its actor's layers);
// a directory without a checkpoint is a usage error, a checkpoint without a
// SAC agent an error naming that.
func TestBenchTrainFrom(t *testing.T) {
	dir := t.TempDir()
	cfg := sac.DefaultConfig(2)
	cfg.Hidden, cfg.BatchSize = []int{32, 16}, 64
	s, err := sac.New(5, []float64{-1, -1}, []float64{1, 1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Updates = 7
	f := ckpt.New()
	s.Save(f)
	s.Close()
	if err := f.Save(filepath.Join(dir, "checkpoint.ckpt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"algo": "sac", "batch": 64, "auto_alpha": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error {
		return runBench([]string{"train", "--no-torch", "--iters", "1", "--from", dir, "--json"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "(obs 5, act 2, [32 16], batch 64; after 7 updates)"; !strings.Contains(out, want) {
		t.Errorf("bench train --from prints no row with %q:\n%s", want, out)
	}
	if strings.Contains(out, "takes") {
		t.Errorf("bench train --from compares an agent of other sizes with the fresh hopper agent:\n%s", out)
	}
	wantUsage(t, "bench train --from a directory without a run", runBench([]string{"train", "--from", t.TempDir()}), "", "--from", "no checkpoint")

	bc := t.TempDir()
	if err := ckpt.New().Save(filepath.Join(bc, "checkpoint.ckpt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bc, "config.json"), []byte(`{"algo": "bc", "batch": 256}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runBench([]string{"train", "--no-torch", "--iters", "1", "--from", bc})
	if err == nil || !strings.Contains(err.Error(), "no SAC agent") {
		t.Errorf("bench train --from a checkpoint without a SAC agent: %v, want an error naming it", err)
	}
}

// TestRolloutDeviceFlag: --rollout-device (or a --config's rollout_device
// key) is a usage error before any run directory exists when unknown,
// beside an algorithm without the ADM (mbpo online, mopo offline) and, in
// a binary without the admpo_cuda tag, for cuda (naming the tag). A short
// online admpo run with --device emu --rollout-device emu trains end to
// end (model fits, device roll-outs, checkpoints, export) and records the
// setting in config.json.
func TestRolloutDeviceFlag(t *testing.T) {
	tmp, data, conf := deviceFixture(t, "rollout_device: bogus\n")
	online := []string{"--steps", "1", "--warmup", "1"}
	offline := []string{"--dataset", data, "--epochs", "1", "--steps-per-epoch", "1"}
	cases := []struct {
		name  string
		run   func([]string) error
		args  []string
		parts []string
	}{
		{"online bogus", trainOnline, append([]string{"--rollout-device", "bogus"}, online...), []string{"unknown rollout device", "emu or cuda"}},
		{"online config", trainOnline, append([]string{"--config", conf}, online...), []string{"unknown rollout device"}},
		{"online mbpo", trainOnline, append([]string{"--algo", "mbpo", "--rollout-device", "emu"}, online...), []string{"admpo only", "mbpo"}},
		{"offline mopo", trainOffline, append([]string{"--algo", "mopo", "--rollout-device", "emu"}, offline...), []string{"admpo only", "mopo"}},
		{"offline bogus", trainOffline, append([]string{"--rollout-device", "tpu"}, offline...), []string{"unknown rollout device"}},
	}
	if !train.CUDABuilt {
		cases = append(cases, struct {
			name  string
			run   func([]string) error
			args  []string
			parts []string
		}{"online cuda", trainOnline, append([]string{"--rollout-device", "cuda"}, online...), []string{"rollout device cuda", "admpo_cuda"}})
	}
	for _, c := range cases {
		out := filepath.Join(tmp, "run-"+strings.ReplaceAll(c.name, " ", "-"))
		_, err := captureStdout(t, func() error { return c.run(append(c.args, "--out", out)) })
		wantUsage(t, c.name, err, out, c.parts...)
	}
	dir := filepath.Join(tmp, "run")
	run := []string{"--algo", "admpo", "--preset", "quick", "--steps", "200", "--warmup", "200", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--model-every", "100", "--rollout-batch", "32", "--m", "3",
		"--adm-hidden", "8", "--adm-layers", "1", "--adm-res-blocks", "1", "--model-max-epochs", "2",
		"--eval-every", "200", "--eval-episodes", "1", "--checkpoint-every", "200", "--tensorboard=false",
		"--device", "emu", "--rollout-device", "emu", "--out", dir}
	out, err := captureStdout(t, func() error { return trainOnline(run) })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "roll-out 32 x H=") {
		t.Errorf("no roll-out in the log:\n%s", out)
	}
	if c := runConfig(t, dir); c.RolloutDevice != "emu" {
		t.Errorf("config.json: rollout device %q, want emu", c.RolloutDevice)
	}
}

// deviceFixture returns a temporary directory holding a small random
// hopper data set (data) and a --config file of yaml (conf).
func deviceFixture(t *testing.T, yaml string) (tmp, data, conf string) {
	t.Helper()
	tmp = t.TempDir()
	data = filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	conf = filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return tmp, data, conf
}

// runConfig reads the online run's config.json in dir.
func runConfig(t *testing.T, dir string) train.OnlineConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c train.OnlineConfig
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
