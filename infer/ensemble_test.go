package infer_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

type ensFixture struct {
	ens   *models.Ensemble
	actor *models.Actor
	pol   *infer.Policy
	eng   *infer.Ensemble
}

func newEnsFixture(t *testing.T) *ensFixture {
	t.Helper()
	ortskip.IfMissing(t)
	const od, ad = 5, 2
	f := &ensFixture{
		// 5 members, 3 of them elites: the draw must use the elite list and
		// the MOPO penalty every member.
		ens:   newTestEnsemble(61, od, ad, 5, []int{16, 16}, []int{0, 2, 3}),
		actor: newTestActor(62, od, []float64{-1, -2}, []float64{1, 0.5}, []int{32, 32}),
	}
	// Member 4 (not an elite) is the most uncertain one: the MOPO penalty
	// must still take it into account.
	for i := range f.ens.Bounds[4].Max {
		f.ens.Bounds[4].Max[i], f.ens.Bounds[4].Min[i] = 1, -1
	}
	eb, err := onnx.ExportEnsemble(f.ens, nil)
	f.eng = openEngine(t, "ensemble", eb, err, infer.OpenEnsemble, testOpts)
	ab, err := onnx.ExportActor(f.actor, nil)
	f.pol = openEngine(t, "actor", ab, err, infer.OpenPolicy, testOpts)
	return f
}

// TestEnsembleMatchesReference compares the ensemble roll-out with the
// plain-Go reference: a uniformly drawn elite per row, next = obs + delta
// mean + std·eps, and MOPO's penalty max_members ||exp(logvar/2)|| over
// [obs, reward].
func TestEnsembleMatchesReference(t *testing.T) {
	f := newEnsFixture(t)
	const n, od, ad = 30, 5, 2
	start := testfix.RandStart(rand.New(rand.NewSource(9)), n, 1, od, ad, func(int) int { return 1 })
	for _, penalty := range []float32{0, 2.5} {
		cfg := infer.RollConfig{Horizon: 5, Penalty: penalty, Done: doneOutside(1.5), ChunkRows: 13}
		got := rollSeeded(t, f.eng, f.pol, start, cfg, 12)
		want := checkRef(t, fmt.Sprintf("penalty %g: ensemble vs reference", penalty), got, f.pol, start, od, ad, cfg, 12, testfix.RefEnsembleModel(f.ens))
		if nd := countDone(want); nd == 0 || nd == n {
			t.Fatalf("the Done function ended %d of %d rows; the test wants some", nd, n)
		}
		if penalty != 0 {
			for i, u := range got.Uncertainty {
				if !(u > 0) {
					t.Fatalf("transition %d: MOPO uncertainty %g", i, u)
				}
			}
		}
	}
}

// TestEnsembleUsesLastState gives the ensemble a window of M = 3: only each
// row's current state may matter, so the result must equal the roll-out
// from an M = 1 batch of those states.
func TestEnsembleUsesLastState(t *testing.T) {
	f := newEnsFixture(t)
	const n, m, od, ad = 9, 3, 5, 2
	long := testfix.RandStart(rand.New(rand.NewSource(4)), n, m, od, ad, func(i int) int { return 1 + i%m })
	one := &infer.Start{N: n, M: 1, Len: make([]int, n), Obs: make([]float32, n*od)}
	for i, l := range long.Len {
		one.Len[i] = 1
		copy(one.Obs[i*od:(i+1)*od], long.Obs[(i*m+l-1)*od:(i*m+l)*od])
	}
	cfg := infer.RollConfig{Horizon: 3, Penalty: 1}
	got := rollSeeded(t, f.eng, f.pol, long, cfg, 1)
	checkRef(t, "M=3 start vs reference from the last states", got, f.pol, one, od, ad, cfg, 1, testfix.RefEnsembleModel(f.ens))
	// A bad window is still rejected.
	long.Len[2] = m + 1
	if _, err := f.eng.Rollout(f.pol, long, cfg, rand.New(rand.NewSource(1))); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Fatalf("row with Len > M: got %v", err)
	}
}
