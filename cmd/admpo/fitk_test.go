package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/trainfix"
)

// TestTrainOfflineModelFitK: --model-fit-k one trains an ADMPO-OFF run with
// the one-k ADM fit and records model_fit_k "one" in config.json; a bad
// value and one with a device are usage errors (exit 2) that make no run
// directory.
func TestTrainOfflineModelFitK(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, trainfix.RandomHopper(t, 200, 1))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bad", []string{"--model-fit-k", "some"}, `model fit k "some" must be all or one`},
		{"device", []string{"--model-fit-k", "one", "--device", "emu"}, "CPU only"},
	} {
		out := filepath.Join(tmp, "run-"+c.name)
		err := trainOffline(append([]string{"--dataset", data, "--out", out}, c.args...))
		if err == nil || !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v (exit %d), want a usage error naming %q", c.name, err, exitCode(err), c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: a run directory was made", c.name)
		}
	}
	ortskip.IfMissing(t)
	out := filepath.Join(tmp, "run-onek")
	if err := trainOffline([]string{"--dataset", data, "--algo", "admpo", "--epochs", "1", "--steps-per-epoch", "5",
		"--rollout-every", "5", "--rollout-batch", "20", "--horizon", "2", "--model-max-epochs", "2", "--adm-hidden", "8",
		"--adm-layers", "1", "--adm-res-blocks", "1", "--hidden", "16,16", "--eval-episodes", "1", "--model-fit-k", "one",
		"--out", out}); err != nil {
		t.Fatalf("--model-fit-k one: %v", err)
	}
	var cfg struct {
		FitK *string `json:"model_fit_k"`
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || cfg.FitK == nil || *cfg.FitK != "one" {
		t.Fatalf("config.json model_fit_k %v (%v), want one", cfg.FitK, err)
	}
}
