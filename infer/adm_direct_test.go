package infer_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// doneOutside ends an episode when the first predicted coordinate leaves [-x, x].
func doneOutside(x float32) func([]float32) bool {
	return func(o []float32) bool { return o[0] > x || o[0] < -x }
}

// countDone is the number of transitions that ended their row.
func countDone(tr *infer.Transitions) int {
	n := 0
	for _, d := range tr.Done {
		if d {
			n++
		}
	}
	return n
}

// TestADMDirectMatchesReference compares ADMDirect's roll-outs with the
// naive reference (plain-Go ADM forward, explicit histories, the documented
// RNG order) for both graph forms, m = 3 and m = 1, start rows of mixed
// lengths, with and without the U^ADM penalty and with a Done function that
// ends some rows. The reference's U is sqrt(mean_d var_k(mu_k)) computed
// directly from the k = 1..min(len, m) plan predictions.
func TestADMDirectMatchesReference(t *testing.T) {
	const n, horizon = 24, 5
	for _, m := range []int{3, 1} {
		for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
			f := newADMFixture(t, int64(10+m), smallADMConfig(m), form)
			ref := testfix.RefADMModel(f.adm)
			for _, c := range []struct {
				name    string
				penalty float32
				wantU   bool
			}{{"plain", 0, false}, {"penalty", 0.7, false}, {"wantU", 0, true}} {
				t.Run(fmt.Sprintf("m%d/%v/%s", m, form, c.name), func(t *testing.T) {
					start := testfix.RandStart(rand.New(rand.NewSource(5)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
					cfg := infer.RollConfig{Horizon: horizon, Penalty: c.penalty, WantU: c.wantU, Done: doneOutside(1.5)}
					got := rollSeeded(t, f.direct, f.pol, start, cfg, 99)
					want := checkRef(t, "ADMDirect vs reference", got, f.pol, start, f.obsDim, f.actDim, cfg, 99, ref)
					// The scenario must exercise what it claims to.
					if nd := countDone(want); nd == 0 || nd == n {
						t.Fatalf("the Done function ended %d of %d rows; pick a threshold that ends some", nd, n)
					}
					if want.N <= n {
						t.Fatalf("only %d transitions for %d rows", want.N, n)
					}
					pos := 0
					for _, u := range want.Uncertainty {
						if u > 0 {
							pos++
						}
					}
					switch {
					case (c.penalty != 0 || c.wantU) && m > 1 && pos == 0:
						t.Fatal("U^ADM is zero everywhere")
					case (c.penalty == 0 && !c.wantU || m == 1) && pos != 0:
						t.Fatalf("%d non-zero uncertainties where none is computed or m = 1", pos)
					}
				})
			}
		}
	}
}

// TestADMDirectDeterministicPolicy checks the mean-action path: no policy
// noise is drawn, so the reference (which also draws none) must still match.
func TestADMDirectDeterministicPolicy(t *testing.T) {
	f := newADMFixture(t, 21, smallADMConfig(3), onnx.ADMGRUOp)
	start := testfix.RandStart(rand.New(rand.NewSource(6)), 10, 3, f.obsDim, f.actDim, func(i int) int { return 1 + i%3 })
	cfg := infer.RollConfig{Horizon: 4, Penalty: 0.3, DeterministicPolicy: true}
	got := rollSeeded(t, f.direct, f.pol, start, cfg, 7)
	checkRef(t, "deterministic policy", got, f.pol, start, f.obsDim, f.actDim, cfg, 7, testfix.RefADMModel(f.adm))
	// The first step's actions are the actor's mean actions.
	for i := 0; i < 10; i++ {
		a := testfix.RefActor(f.actor, got.Obs[i*f.obsDim:(i+1)*f.obsDim], nil)
		for j, v := range a {
			if !testfix.CloseTo(got.Act[i*f.actDim+j], float32(v), 1e-5) {
				t.Fatalf("row %d action %d = %g, mean action %g", i, j, got.Act[i*f.actDim+j], v)
			}
		}
	}
}

// TestReferenceWithGoActor: the reference roll-out with testfix's float64
// actor in place of the ONNX policy (what a test without ONNX Runtime
// uses) still matches ADMDirect, sampled and deterministic, with U^ADM, MC
// dropout and a Done function.
func TestReferenceWithGoActor(t *testing.T) {
	const n, m = 20, 3
	f := newADMFixture(t, 31, smallADMConfig(m), onnx.ADMUnrolled)
	drop, _ := dropEngines(t, f, onnx.ADMUnrolled, testDropout, testOpts)
	start := testfix.RandStart(rand.New(rand.NewSource(8)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	for _, det := range []bool{false, true} {
		cfg := infer.RollConfig{Horizon: 4, Penalty: 0.5, Done: doneOutside(1.5), DeterministicPolicy: det}
		for _, c := range []struct {
			r   infer.Roller
			mod testfix.RefModel
		}{{f.direct, testfix.RefADMModel(f.adm)}, {drop, testfix.RefADMDropModel(f.adm, testDropout)}} {
			got := rollSeeded(t, c.r, f.pol, start, cfg, 3)
			want := testfix.RefRollout(t, testfix.ActorPolicy(f.actor), start, f.obsDim, f.actDim, cfg, rand.New(rand.NewSource(3)), c.mod)
			if d := testfix.DiffTransitions(got, want, f.obsDim, f.actDim, 1e-4); d != "" {
				t.Fatalf("deterministic %v, dropout %v: %s", det, c.r == drop, d)
			}
		}
	}
}

// TestADMDirectChunks checks ChunkRows: chunks smaller than N still give
// every row its H transitions, matching the reference rolled out chunk by
// chunk (the RNG contract is per chunk); chunks of at least N give exactly
// the unchunked result.
func TestADMDirectChunks(t *testing.T) {
	const n, m, horizon = 23, 3, 4
	f := newADMFixture(t, 31, smallADMConfig(m), onnx.ADMGRUOp)
	start := testfix.RandStart(rand.New(rand.NewSource(8)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*7)%m })
	base := infer.RollConfig{Horizon: horizon, Penalty: 0.5}
	whole := rollSeeded(t, f.direct, f.pol, start, base, 3)
	if whole.N != n*horizon {
		t.Fatalf("%d transitions, want %d", whole.N, n*horizon)
	}
	for _, chunk := range []int{1, 5, 22} {
		cfg := base
		cfg.ChunkRows = chunk
		got := rollSeeded(t, f.direct, f.pol, start, cfg, 3)
		if got.N != n*horizon {
			t.Fatalf("chunk %d: %d transitions, want %d", chunk, got.N, n*horizon)
		}
		checkRef(t, fmt.Sprintf("chunk %d vs reference", chunk), got, f.pol, start, f.obsDim, f.actDim, cfg, 3, testfix.RefADMModel(f.adm))
		// With one row per chunk, every row's H transitions come together.
		if chunk == 1 {
			for i := 0; i < got.N; i++ {
				if got.Step[i] != int32(i%horizon) {
					t.Fatalf("chunk 1: transition %d has step %d, want %d", i, got.Step[i], i%horizon)
				}
			}
		}
	}
	for _, chunk := range []int{n, 1000} {
		cfg := base
		cfg.ChunkRows = chunk
		got := rollSeeded(t, f.direct, f.pol, start, cfg, 3)
		if d := testfix.DiffTransitions(got, whole, f.obsDim, f.actDim, 0); d != "" {
			t.Fatalf("chunk %d differs from the unchunked roll-out: %s", chunk, d)
		}
	}
}
