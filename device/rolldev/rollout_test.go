package rolldev_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/device/rolldev/rolldevtest"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/testfix"
)

// TestRolloutMatchesReferences: on emu, Engine.Rollout in ModeDirect and
// in ModeIncremental gives the float64 reference roll-out's and
// infer.ADMDirect's and infer.ADMIncremental's (ONNX Runtime CPU)
// transitions from the same seed and ChunkRows within 1e-4, with Done,
// Step and Back equal: a small ADM (hidden 24, m 4, 2 blocks), 300 start
// rows of lengths 1..m, chunks of 128, horizon 5, over penalty 0 and 1
// (U^ADM), dropout 0 and 0.1, Done none, host, device (DoneSpec) and
// both, the deterministic policy, WantMean, and compaction lazy, every
// step and never; and m = 1 (no actions in the window) in chunks of 37.
func TestRolloutMatchesReferences(t *testing.T) {
	type c = rolldevtest.RollOptions
	m1 := rolldevtest.Small
	m1.M = 1
	cases := map[string]c{
		"m1_chunk37":         {Cfg: m1, Penalty: 1, Dropout: 0.1, Rows: 100, ChunkRows: 37, Seed: 3},
		"plain":              {Seed: 1},
		"penalty":            {Penalty: 1, Seed: 2},
		"dropout":            {Dropout: 0.1, Seed: 3},
		"penalty_dropout":    {Penalty: 1, Dropout: 0.1, Seed: 4},
		"done_host":          {Done: rolldevtest.DoneHost, Seed: 15},
		"done_device":        {Done: rolldevtest.DoneDevice, Penalty: 1, Seed: 6},
		"done_both":          {Done: rolldevtest.DoneBoth, Dropout: 0.1, Seed: 7},
		"deterministic_mean": {Deterministic: true, WantMean: true, Done: rolldevtest.DoneDevice, Seed: 28},
	}
	for name, o := range cases {
		for _, cm := range []struct {
			name string
			c    rolldev.Compaction
		}{{"lazy", rolldev.CompactLazy}, {"always", rolldev.CompactAlways}, {"never", rolldev.CompactNever}} {
			if cm.c != rolldev.CompactLazy && o.Done == rolldevtest.DoneNone {
				continue // no row ends: compaction never runs
			}
			o.Compaction = cm.c
			for _, mode := range []rolldev.Mode{rolldev.ModeDirect, rolldev.ModeIncremental} {
				o.Mode = mode
				t.Run(fmt.Sprintf("%s/%s/%v", name, cm.name, mode), func(t *testing.T) {
					d := emu.New()
					defer d.Close()
					rolldevtest.CompareRollout(t, d, o)
				})
			}
		}
	}
}

// TestRolloutReordered: the U^ADM and dropout case holds its 1e-4 in both
// modes with the products summed in float64 (sacdevtest.Reordered: another
// sum order, as cuBLAS's), the rows ending on the device.
func TestRolloutReordered(t *testing.T) {
	for _, mode := range []rolldev.Mode{rolldev.ModeDirect, rolldev.ModeIncremental} {
		t.Run(mode.String(), func(t *testing.T) {
			d := emu.New()
			defer d.Close()
			rolldevtest.CompareRollout(t, sacdevtest.Reordered(d), rolldevtest.RollOptions{Penalty: 1, Dropout: 0.1,
				Done: rolldevtest.DoneDevice, Compaction: rolldev.CompactAlways, Mode: mode, Seed: 6})
		})
	}
}

// TestRolloutModesAgree: on emu, ModeDirect and ModeIncremental give the
// same transitions from the same seed within 1e-4 (Done, Step and Back
// equal), and ModeAuto is ModeDirect without U^ADM and ModeIncremental
// with it, bit for bit; one Engine rolls in every mode in turn.
func TestRolloutModesAgree(t *testing.T) {
	m1 := rolldevtest.Small
	m1.M = 1
	for name, o := range map[string]rolldevtest.RollOptions{
		"plain":           {Seed: 1},
		"penalty_dropout": {Penalty: 1, Dropout: 0.1, Done: rolldevtest.DoneDevice, Seed: 6},
		"done_host":       {Penalty: 1, Done: rolldevtest.DoneHost, Compaction: rolldev.CompactAlways, Seed: 15},
		"m1":              {Cfg: m1, Penalty: 1, Rows: 100, ChunkRows: 37, Seed: 3},
	} {
		t.Run(name, func(t *testing.T) {
			d := emu.New()
			defer d.Close()
			rc, err := rolldevtest.NewRollCase(o)
			if err != nil {
				t.Fatal(err)
			}
			chunk := o.ChunkRows
			if chunk == 0 {
				chunk = 128
			}
			e, err := rolldevtest.NewEngine(d, rc.ADM, o.Dropout, rc.Actor, chunk)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			e.Compaction = o.Compaction
			got := map[rolldev.Mode]*rollout.Transitions{}
			for _, mode := range []rolldev.Mode{rolldev.ModeIncremental, rolldev.ModeDirect, rolldev.ModeAuto} {
				e.Mode = mode
				if got[mode], err = e.Rollout(rc.Start, rc.Cfg, rand.New(rand.NewSource(rc.Seed))); err != nil {
					t.Fatalf("%v: %v", mode, err)
				}
			}
			od, ad := rc.ADM.Cfg.ObsDim, rc.ADM.Cfg.ActDim
			if s := testfix.DiffTransitions(got[rolldev.ModeIncremental], got[rolldev.ModeDirect], od, ad, 1e-4); s != "" {
				t.Errorf("incremental against direct: %s", s)
			}
			auto := rolldev.ModeDirect
			if o.Penalty != 0 {
				auto = rolldev.ModeIncremental
			}
			if s := testfix.DiffTransitions(got[rolldev.ModeAuto], got[auto], od, ad, 0); s != "" {
				t.Errorf("auto against %v: %s", auto, s)
			}
		})
	}
}

// TestRolloutErrors: missing weights, a wrong actor, start batch,
// horizon, chunk or DoneSpec, and a closed engine are errors that name the
// problem, not panics.
func TestRolloutErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	rc, err := rolldevtest.NewRollCase(rolldevtest.RollOptions{Rows: 20, ChunkRows: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", what, err, want)
		}
	}
	cfg := rolldevtest.Config(rc.ADM, 0)
	_, err = rolldev.New(d, cfg, 0)
	expect("no rows", err, "plans")
	e, err := rolldev.New(d, cfg, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := func() *rand.Rand { return rand.New(rand.NewSource(1)) }
	roll := func(s *rollout.Start, c rollout.RollConfig) error {
		_, err := e.Rollout(s, c, rng())
		return err
	}
	expect("no ADM", roll(rc.Start, rc.Cfg), "no ADM")
	if err := e.SetADM(rolldevtest.Weights(rc.ADM)); err != nil {
		t.Fatal(err)
	}
	expect("no actor", roll(rc.Start, rc.Cfg), "no actor")
	aw := rolldevtest.ActorWeights(rc.Actor)
	bad := aw
	bad.Sizes = append([]int{12}, aw.Sizes[1:]...)
	expect("actor input", e.SetActor(bad), "sizes")
	bad = aw
	bad.Params = aw.Params[1:]
	expect("actor tensors", e.SetActor(bad), "tensors")
	bad = aw
	bad.Params = append([][]float32{aw.Params[0][1:]}, aw.Params[1:]...)
	expect("actor layer", e.SetActor(bad), "layer 0")
	bad = aw
	bad.LogStdMin, bad.LogStdMax = 1, 1
	expect("log-std", e.SetActor(bad), "log-std")
	bad = aw
	bad.Scale = aw.Scale[1:]
	expect("scale", e.SetActor(bad), "scales")
	if err := e.SetActor(aw); err != nil {
		t.Fatal(err)
	}
	c := rc.Cfg
	c.Horizon = 0
	expect("horizon", roll(rc.Start, c), "horizon")
	c = rc.Cfg
	c.ChunkRows = 9
	expect("chunk", roll(rc.Start, c), "chunk rows")
	c = rc.Cfg
	c.DoneSpec = &rollout.DoneSpec{Ranges: []rollout.Range{{Dim: 11, HasHi: true}}}
	expect("spec", roll(rc.Start, c), "dimension 11")
	e.Mode = rolldev.Mode(7)
	expect("mode", roll(rc.Start, rc.Cfg), "unknown engine mode Mode(7)")
	e.Mode = rolldev.ModeAuto
	s := *rc.Start
	s.Len = append([]int{5}, s.Len[1:]...)
	expect("length", roll(&s, rc.Cfg), "start row 0 has 5 states")
	s = *rc.Start
	s.Obs = append([]float32{float32(math.NaN())}, s.Obs[1:]...)
	expect("NaN", roll(&s, rc.Cfg), "NaN")
	s = *rc.Start
	s.Obs = s.Obs[1:]
	expect("obs", roll(&s, rc.Cfg), "start batch")
	expect("empty", roll(&rollout.Start{}, rc.Cfg), "empty")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c = rc.Cfg
	c.Context = ctx
	expect("cancelled", roll(rc.Start, c), "canceled")
	if err := roll(rc.Start, rc.Cfg); err != nil {
		t.Fatalf("valid roll-out: %v", err)
	}
	// Another actor size replaces the actor.
	small := rolldevtest.ActorWeights(rolldevtest.NewActor(11, 3, []int{16}, 2))
	if err := e.SetActor(small); err != nil {
		t.Fatalf("a smaller actor: %v", err)
	}
	if err := roll(rc.Start, rc.Cfg); err != nil {
		t.Fatalf("roll-out with the smaller actor: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	expect("closed", roll(rc.Start, rc.Cfg), "closed")
	expect("closed", e.SetActor(aw), "closed")
	expect("closed", e.SetADM(rolldevtest.Weights(rc.ADM)), "closed")
}

// BenchmarkRollout times Engine.Rollout on emu at hopper's size over 512
// start rows in chunks of 256 (device/cuda's BenchmarkRollout times 10k
// and 100k rows on a GPU).
func BenchmarkRollout(b *testing.B) {
	d := emu.New()
	defer d.Close()
	rolldevtest.BenchRollout(b, d, []int{512}, []int{256, 1024})
}
