package dynamics

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestDevRollerMatchesORT fits a tiny ADM (a few Adam steps on a linear
// system) and rolls the same actor out from the same starts with the same
// seed and chunk rows by the ONNX Runtime roller (CPU) and by the emu
// device roller (Config.RollDevice) in the same style (direct or
// incremental: Engine and DevMode's Mode): the transitions agree within
// 1e-4, with done flags, steps and backtracking lengths equal; with and
// without U^ADM's penalty and MC dropout, with the termination rule as the
// host Done func on both or as a DoneSpec on the device (Done nil, as
// train passes a task's spec), in chunks of 48 rows and in the engines'
// default chunks (8192 on both). The ADM is refitted between the two
// dropout settings, so the roller's second roll-outs use the new weights.
func TestDevRollerMatchesORT(t *testing.T) {
	ortskip.IfMissing(t)
	rng := rand.New(rand.NewSource(5))
	ls := newLinearSystem(0.9, rng)
	data := linearReplay(t, ls, 10, 20, rng)
	d := emu.New()
	defer d.Close()
	cfg := Config{Task: "linear", Seed: 3, M: 3, ADMHidden: 16, ADMLayers: 2, ADMResBlocks: 2, MaxEpochs: 2,
		Patience: 2, EpochSteps: 10, EpochPasses: 1, Improve: "scaled", Engine: "direct", RollDevice: "emu", RollOn: d}
	dyn, err := NewADM(cfg, ls.obs, ls.act)
	if err != nil {
		t.Fatal(err)
	}
	a := dyn.(*ADM)
	defer func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	low, high := make([]float64, ls.act), make([]float64, ls.act)
	for j := range low {
		low[j], high[j] = -1, 1.5
	}
	actor := models.NewActor(ls.obs, low, high, []int{16, 16}, rng)
	ab, err := onnx.ExportActor(actor, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := infer.Options{Threads: 1}
	pol, err := infer.OpenPolicy(ab, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	// The termination rule as data (rollout.DoneSpec: |obs[0]| >= 2.5 ends
	// a row) and as the host func ONNX Runtime's roll-out calls.
	spec := &rollout.DoneSpec{Ranges: []rollout.Range{{Dim: 0, Abs: true, Hi: 2.5, HasHi: true}}}
	done := spec.Eval
	for _, p := range []float64{0, 0.1} {
		a.RolloutDropout = p
		if _, err := a.Fit(context.Background(), data, 0, rng); err != nil {
			t.Fatal(err)
		}
		start, err := data.SampleStarts(150, a.M(), rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			engine  string
			penalty float32
			chunk   int
			spec    bool // the device gets the rule as a DoneSpec, not Done
		}{{"direct", 0, 48, false}, {"direct", 1, 0, true}, {"incremental", 0, 0, false}, {"incremental", 1, 48, true}} {
			engine, penalty, chunk := c.engine, c.penalty, c.chunk
			a.Engine = engine
			if a.Dev.Mode, err = DevMode(engine); err != nil {
				t.Fatal(err)
			}
			rc := infer.RollConfig{Horizon: 4, Penalty: penalty, WantU: true, Done: done, ChunkRows: chunk}
			ort, err := a.ORTRoller(opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ort.Rollout(pol, start, rc, rand.New(rand.NewSource(9)))
			ort.Close()
			if err != nil {
				t.Fatal(err)
			}
			r, err := a.Roller(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.(ActorSetter).SetActor(actor); err != nil {
				t.Fatal(err)
			}
			if c.spec {
				rc.Done, rc.DoneSpec = nil, spec
			}
			got, err := r.Rollout(pol, start, rc, rand.New(rand.NewSource(9)))
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			ended := 0
			for _, e := range want.Done {
				if e {
					ended++
				}
			}
			if s := testfix.DiffTransitions(got, want, ls.obs, ls.act, 1e-4); s != "" {
				t.Errorf("%s, dropout %v, penalty %v, chunk %d, spec %v: %s", engine, p, penalty, chunk, c.spec, s)
			}
			if ended == 0 {
				t.Errorf("%s, dropout %v: no row ended (the termination is not tested)", engine, p)
			}
			t.Logf("%s, dropout %v, penalty %v, chunk %d, spec %v: %d transitions, %d ended", engine, p, penalty, chunk, c.spec, want.N, ended)
		}
	}
}

// TestDevRollerErrors: a device roll-out names what is missing, the
// ensemble and an unknown device are refused, and a policy of other
// dimensions is an error.
func TestDevRollerErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	cfg := Config{Seed: 1, M: 2, ADMHidden: 8, ADMLayers: 1, ADMResBlocks: 1, Engine: "direct", RollDevice: "emu", RollOn: d}
	dyn, err := NewADM(cfg, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	a := dyn.(*ADM)
	defer a.Close()
	r, err := a.Roller(infer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := testfix.RandStart(rand.New(rand.NewSource(1)), 4, 2, 3, 2, func(int) int { return 1 })
	_, err = r.Rollout(nil, start, infer.RollConfig{Horizon: 1}, rand.New(rand.NewSource(1)))
	if err == nil || !strings.Contains(err.Error(), "no actor") {
		t.Errorf("roll-out without an actor: %v", err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{RollDevice: "tpu", RollOn: d, M: 2, ADMHidden: 8, ADMLayers: 1}, "unknown roll-out device"},
		{Config{RollDevice: "emu", M: 2, ADMHidden: 8, ADMLayers: 1}, "no open device"},
		{Config{RollDevice: "emu", RollOn: d, M: 2, ADMHidden: 8, ADMLayers: 1, Engine: "auto"}, "unknown ADM engine"},
	} {
		if _, err := NewADM(c.cfg, 3, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg.RollDevice, err, c.want)
		}
	}
	if _, err := NewEnsemble(Config{Ensemble: 2, Elites: 1, RollDevice: "emu", RollOn: d}, 3, 2); err == nil ||
		!strings.Contains(err.Error(), "ONNX Runtime only") {
		t.Errorf("ensemble on a roll-out device: %v", err)
	}
}

// TestDevRollerModeFollowsEngine: NewADM gives the device roller the
// style of the ADM's ONNX Runtime engine (Config.Engine; "" is direct, as
// ORTRoller's default).
func TestDevRollerModeFollowsEngine(t *testing.T) {
	d := emu.New()
	defer d.Close()
	for engine, want := range map[string]rolldev.Mode{"direct": rolldev.ModeDirect, "": rolldev.ModeDirect,
		"incremental": rolldev.ModeIncremental} {
		cfg := Config{Seed: 1, M: 2, ADMHidden: 8, ADMLayers: 1, Engine: engine, RollDevice: "emu", RollOn: d}
		dyn, err := NewADM(cfg, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := dyn.(*ADM).Dev.Mode; got != want {
			t.Errorf("engine %q: device mode %v, want %v", engine, got, want)
		}
	}
}
