package infer_test

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
)

// checkRef fails the test when got differs by more than 1e-4 from the
// reference roll-out (testfix.RefRollout) of mod with the policy p from
// start under cfg with an RNG seeded with seed (the seed got was rolled out
// with); what names got in the message. It returns the reference
// transitions.
func checkRef(t testing.TB, what string, got *infer.Transitions, p *infer.Policy, start *infer.Start, od, ad int, cfg infer.RollConfig, seed int64, mod testfix.RefModel) *infer.Transitions {
	t.Helper()
	want := testfix.RefRollout(t, p.Act, start, od, ad, cfg, rand.New(rand.NewSource(seed)), mod)
	if d := testfix.DiffTransitions(got, want, od, ad, 1e-4); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
	return want
}
