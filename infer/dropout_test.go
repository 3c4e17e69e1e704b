package infer_test

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// MC dropout in the ADM-Roll engines, checked against the plain-Go
// reference (testfix.ADMPredict) given the same keep flags: the reference scales
// kept units by 1/(1-p) itself, so a graph that drops the scaling or the
// mask, or an engine that feeds other masks, fails these tests.

const testDropout = 0.25

// dropEngines opens f's model with MC dropout p in the direct engine (the
// given form) and the incremental engine, with opts.
func dropEngines(t testing.TB, f *admFixture, form onnx.ADMForm, p float64, opts infer.Options) (*infer.ADMDirect, *infer.ADMIncremental) {
	t.Helper()
	b, err := onnx.ExportADM(f.adm, onnx.ADMOptions{Form: form, Dropout: p}, nil)
	d := openEngine(t, "ADM with dropout", b, err, infer.OpenADMDirect, opts)
	sb, err := onnx.ExportADMStepWith(f.adm, onnx.ADMStepOptions{Dropout: p}, nil)
	inc := openEngine(t, "ADM step with dropout", sb, err, infer.OpenADMIncremental, opts)
	if d.Dropout() != p || inc.Dropout() != p {
		t.Fatalf("engines report dropout %v and %v, want %v", d.Dropout(), inc.Dropout(), p)
	}
	return d, inc
}

// dropCase is one roll-out setting of the dropout tests.
type dropCase struct {
	name    string
	penalty float32
	chunk   int
	opts    infer.Options
}

// dropCases are no penalty, penalty p, and penalty p in chunks of chunk
// rows with the batch cut into calls of rows rows run by two workers.
func dropCases(p float32, chunk, rows int) []dropCase {
	return []dropCase{{"plain", 0, 0, testOpts}, {"penalty", p, 0, testOpts},
		{fmt.Sprintf("penalty-chunk%d-split", chunk), p, chunk, infer.Options{Threads: 1, Workers: 2, BatchRows: rows}}}
}

// rollConfig is c's roll-out of horizon steps, rows ending outside ±1.5.
func (c dropCase) rollConfig(horizon int) infer.RollConfig {
	return infer.RollConfig{Horizon: horizon, Penalty: c.penalty, ChunkRows: c.chunk, Done: doneOutside(1.5)}
}

// TestADMDropoutDirectMatchesReference compares ADMDirect with MC dropout
// (all three graph forms) with the reference roll-out using the same masks,
// with U^ADM, chunking and a batch cut into several ONNX Runtime calls run
// by two workers (the masks must not depend on the cut).
func TestADMDropoutDirectMatchesReference(t *testing.T) {
	const n, horizon = 24, 5
	for _, m := range []int{3, 1} {
		f := newADMFixture(t, int64(60+m), smallADMConfig(m), onnx.ADMUnrolled)
		for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled, onnx.ADMPacked} {
			for _, c := range dropCases(0.7, 7, 5) {
				t.Run(fmt.Sprintf("m%d/%v/%s", m, form, c.name), func(t *testing.T) {
					d, _ := dropEngines(t, f, form, testDropout, c.opts)
					start := testfix.RandStart(rand.New(rand.NewSource(5)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
					cfg := c.rollConfig(horizon)
					got := rollSeeded(t, d, f.pol, start, cfg, 99)
					want := checkRef(t, "ADMDirect with dropout vs reference", got, f.pol, start, f.obsDim, f.actDim, cfg, 99, testfix.RefADMDropModel(f.adm, testDropout))
					if want.N <= n {
						t.Fatalf("only %d transitions for %d rows", want.N, n)
					}
				})
			}
		}
	}
}

// TestADMDropoutIncrementalMatchesDirect: with the same seed the two engines
// draw the same masks and give the same transitions (m = 4 also against the
// reference), whatever the chunking and the split into calls.
func TestADMDropoutIncrementalMatchesDirect(t *testing.T) {
	const n, horizon = 20, 7
	for _, m := range []int{2, 4} {
		f := newADMFixture(t, int64(70+m), smallADMConfig(m), onnx.ADMUnrolled)
		for _, c := range dropCases(1.3, 6, 4) {
			t.Run(fmt.Sprintf("m%d/%s", m, c.name), func(t *testing.T) {
				d, inc := dropEngines(t, f, onnx.ADMPacked, testDropout, c.opts)
				start := testfix.RandStart(rand.New(rand.NewSource(int64(m))), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*3)%m })
				cfg := c.rollConfig(horizon)
				dir := rollSeeded(t, d, f.pol, start, cfg, 11)
				got := rollSeeded(t, inc, f.pol, start, cfg, 11)
				if d := testfix.DiffTransitions(got, dir, f.obsDim, f.actDim, 1e-5); d != "" {
					t.Fatalf("incremental vs direct with dropout: %s", d)
				}
				if m == 4 {
					checkRef(t, "incremental with dropout vs reference", got, f.pol, start, f.obsDim, f.actDim, cfg, 11, testfix.RefADMDropModel(f.adm, testDropout))
				}
			})
		}
	}
}

// TestADMDropoutReproducible: a roll-out with dropout is bit-identical for a
// seed, differs for another seed, and differs from the roll-out without
// dropout (so the comparisons above are not vacuous).
func TestADMDropoutReproducible(t *testing.T) {
	const m, n, horizon = 3, 16, 4
	f := newADMFixture(t, 81, smallADMConfig(m), onnx.ADMPacked)
	d, inc := dropEngines(t, f, onnx.ADMPacked, testDropout, testOpts)
	start := testfix.RandStart(rand.New(rand.NewSource(3)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	cfg := infer.RollConfig{Horizon: horizon, Penalty: 0.5}
	for name, r := range map[string]infer.Roller{"direct": d, "incremental": inc} {
		a := rollSeeded(t, r, f.pol, start, cfg, 4)
		b := rollSeeded(t, r, f.pol, start, cfg, 4)
		if diff := testfix.DiffTransitions(b, a, f.obsDim, f.actDim, 0); diff != "" {
			t.Fatalf("%s: same seed, different roll-outs: %s", name, diff)
		}
		other := rollSeeded(t, r, f.pol, start, cfg, 5)
		if testfix.DiffTransitions(other, a, f.obsDim, f.actDim, 0) == "" {
			t.Fatalf("%s: seeds 4 and 5 gave the same roll-out", name)
		}
	}
	// The same start and the first step's policy noise: without dropout
	// the mean predictions differ from those with it. Compare the roll-out
	// with dropout to the reference without it: some next state must be off.
	got, err := d.Rollout(f.pol, start, infer.RollConfig{Horizon: 1, DeterministicPolicy: true}, rand.New(rand.NewSource(6)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := f.direct.Rollout(f.pol, start, infer.RollConfig{Horizon: 1, DeterministicPolicy: true}, rand.New(rand.NewSource(6)))
	if err != nil {
		t.Fatal(err)
	}
	if testfix.DiffTransitions(got, plain, f.obsDim, f.actDim, 1e-3) == "" {
		t.Fatal("dropout did not change the roll-out")
	}
}

// TestADMDropoutPredictMatchesReference feeds hand-made keep flags (not
// DropoutKeep's) to PredictDropout for every form and compares with the
// plain-Go forward given the same flags times 1/(1-p).
func TestADMDropoutPredictMatchesReference(t *testing.T) {
	const m, n = 3, 13
	cfg := smallADMConfig(m)
	cfg.ResBlocks = 2
	f := newADMFixture(t, 91, cfg, onnx.ADMUnrolled)
	rng := rand.New(rand.NewSource(1))
	od, ad, H, B := cfg.ObsDim, cfg.ActDim, cfg.Hidden, cfg.ResBlocks
	obs := make([]float32, n*od)
	acts := make([]float32, m*n*ad)
	lens := make([]int32, n)
	mask := make([]float32, B*n*H) // [blocks, n, hidden]
	for i := range obs {
		obs[i] = float32(0.5 * rng.NormFloat64())
	}
	for i := range acts {
		acts[i] = float32(2*rng.Float64() - 1)
	}
	for i := range lens {
		lens[i] = int32(1 + rng.Intn(m))
	}
	for i := range mask {
		if rng.Float64() > 0.4 {
			mask[i] = 1
		}
	}
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled, onnx.ADMPacked} {
		d, _ := dropEngines(t, f, form, testDropout, testOpts)
		next := make([]float32, n*od)
		rew := make([]float32, n)
		lv := make([]float32, n*(od+1))
		if err := d.Predict(obs, acts, lens, next, rew, lv); err == nil || !strings.Contains(err.Error(), "dropout") {
			t.Fatalf("%v: Predict on a graph with dropout: err %v, want one naming dropout", form, err)
		}
		if err := d.PredictDropout(obs, acts, lens, mask[:len(mask)-1], next, rew, lv); err == nil {
			t.Fatalf("%v: a short mask was accepted", form)
		}
		if err := d.PredictDropout(obs, acts, lens, mask, next, rew, lv); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			var plan [][]float32
			for j := 0; j < int(lens[i]); j++ {
				plan = append(plan, acts[(j*n+i)*ad:(j*n+i+1)*ad])
			}
			mult := make([][]float64, B)
			for b := range mult {
				mult[b] = make([]float64, H)
				for u := range mult[b] {
					mult[b][u] = float64(mask[(b*n+i)*H+u]) / (1 - testDropout)
				}
			}
			wn, wr, wl := testfix.ADMPredict(f.adm, obs[i*od:(i+1)*od], plan, mult)
			for j := range wn {
				if !testfix.CloseTo(next[i*od+j], float32(wn[j]), 1e-4) {
					t.Fatalf("%v: row %d next[%d] = %g, want %g", form, i, j, next[i*od+j], wn[j])
				}
			}
			if !testfix.CloseTo(rew[i], float32(wr), 1e-4) {
				t.Fatalf("%v: row %d reward %g, want %g", form, i, rew[i], wr)
			}
			for j := range wl {
				if !testfix.CloseTo(lv[i*(od+1)+j], float32(wl[j]), 1e-4) {
					t.Fatalf("%v: row %d logvar[%d] = %g, want %g", form, i, j, lv[i*(od+1)+j], wl[j])
				}
			}
		}
	}
	// The engine without dropout refuses PredictDropout.
	if err := f.direct.PredictDropout(obs, acts, lens, mask, make([]float32, n*od), make([]float32, n), make([]float32, n*(od+1))); err == nil {
		t.Fatal("PredictDropout on a graph without dropout succeeded")
	}
}

// TestDropoutKeep checks the mask generator: flags are 0 or 1, the drop
// share is p (binomial, 5 sigma), a key gives the same flags every time and
// another key (seed, step, row or k) other flags.
func TestDropoutKeep(t *testing.T) {
	const n = 200000
	for _, p := range []float64{0.1, 0.5} {
		keep := make([]float32, n)
		infer.DropoutKeep(7, 2, 3, 1, p, keep)
		drops := 0
		for _, v := range keep {
			switch v {
			case 0:
				drops++
			case 1:
			default:
				t.Fatalf("flag %v is not 0 or 1", v)
			}
		}
		sigma := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(drops)-n*p) > 5*sigma {
			t.Fatalf("p=%v: %d of %d dropped, want %v ± %.0f", p, drops, n, n*p, 5*sigma)
		}
	}
	base := make([]float32, 800)
	infer.DropoutKeep(7, 2, 3, 1, 0.1, base)
	again := make([]float32, 800)
	infer.DropoutKeep(7, 2, 3, 1, 0.1, again)
	for i := range base {
		if base[i] != again[i] {
			t.Fatal("the same key gave different flags")
		}
	}
	for _, k := range [][4]int{{8, 2, 3, 1}, {7, 3, 3, 1}, {7, 2, 4, 1}, {7, 2, 3, 2}} {
		other := make([]float32, 800)
		infer.DropoutKeep(int64(k[0]), k[1], k[2], k[3], 0.1, other)
		same := true
		for i := range base {
			same = same && base[i] == other[i]
		}
		if same {
			t.Fatalf("key %v gave the flags of (7, 2, 3, 1)", k)
		}
	}
}
