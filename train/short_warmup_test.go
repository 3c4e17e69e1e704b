package train

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortWarmUp: the shortest warm-up Validate allows runs, and its
// first fit (too few holdout sequences for some k: NaN per-k MSEs in the
// fit's learning curve) checkpoints and resumes with the NaNs kept; one
// transition shorter is refused up front, for ADMPO and MBPO.
func TestShortWarmUp(t *testing.T) {
	cfg := tinyConfig("admpo")
	cfg.M = 5
	cfg.WarmUp, cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = cfg.MinWarmUp(), 6, 100, 100
	if cfg.WarmUp != 4 {
		t.Fatalf("MinWarmUp for m 5: %d, want 4", cfg.WarmUp)
	}
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOnline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := o.lastFit
	o.Close()
	nan := 0
	for _, e := range want.Curve {
		for _, v := range e.HoldoutPerK {
			if math.IsNaN(v) {
				nan++
			}
		}
	}
	if nan == 0 {
		t.Fatalf("the fit on %d transitions has no NaN holdout MSE: the test no longer covers it", cfg.WarmUp)
	}
	r := resumed(t, ResumeOnline, dir)
	got := r.lastFit
	if len(got.Curve) != len(want.Curve) {
		t.Fatalf("resumed fit curve has %d epochs, want %d", len(got.Curve), len(want.Curve))
	}
	for i := range want.Curve {
		w, g := want.Curve[i], got.Curve[i]
		for k := range w.HoldoutPerK {
			if math.IsNaN(w.HoldoutPerK[k]) != math.IsNaN(g.HoldoutPerK[k]) || !math.IsNaN(w.HoldoutPerK[k]) && w.HoldoutPerK[k] != g.HoldoutPerK[k] {
				t.Errorf("epoch %d k %d: resumed MSE %v, want %v", i, k+1, g.HoldoutPerK[k], w.HoldoutPerK[k])
			}
		}
	}
	for _, algo := range []string{"admpo", "mbpo"} {
		c := tinyConfig(algo)
		c.WarmUp = c.MinWarmUp() - 1
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "warm-up") {
			t.Errorf("%s with warm-up %d: %v, want it refused", algo, c.WarmUp, err)
		}
	}
	if c := tinyConfig("sac"); c.MinWarmUp() != 0 {
		t.Errorf("SAC's MinWarmUp: %d", c.MinWarmUp())
	}
}
