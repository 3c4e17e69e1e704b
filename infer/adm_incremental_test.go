package infer_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// TestADMIncrementalMatchesDirect checks that the incremental engine (cached
// GRU states advanced one step at a time) gives ADMDirect's transitions for
// the same seed, for several m, with and without U^ADM, with rows ending
// early and with chunking; and, for m = 4, that both match the reference.
func TestADMIncrementalMatchesDirect(t *testing.T) {
	const n, horizon = 20, 7
	for _, m := range []int{1, 2, 4, 5} {
		f := newADMFixture(t, int64(40+m), smallADMConfig(m), onnx.ADMGRUOp)
		for _, c := range []struct {
			name    string
			penalty float32
			chunk   int
		}{{"plain", 0, 0}, {"penalty", 1.3, 0}, {"penalty-chunk6", 1.3, 6}} {
			t.Run(fmt.Sprintf("m%d/%s", m, c.name), func(t *testing.T) {
				start := testfix.RandStart(rand.New(rand.NewSource(int64(m))), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*3)%m })
				cfg := infer.RollConfig{Horizon: horizon, Penalty: c.penalty, ChunkRows: c.chunk, Done: doneOutside(1.5)}
				dir := rollSeeded(t, f.direct, f.pol, start, cfg, 11)
				inc := rollSeeded(t, f.inc, f.pol, start, cfg, 11)
				if d := testfix.DiffTransitions(inc, dir, f.obsDim, f.actDim, 1e-5); d != "" {
					t.Fatalf("incremental vs direct: %s", d)
				}
				if m == 4 {
					checkRef(t, "incremental vs reference", inc, f.pol, start, f.obsDim, f.actDim, cfg, 11, testfix.RefADMModel(f.adm))
				}
				if nd := countDone(dir); nd == 0 || nd == n {
					t.Fatalf("the Done function ended %d of %d rows; the test wants some", nd, n)
				}
			})
		}
	}
}

// TestADMIncrementalReuse runs one engine twice: the hidden-state cache of
// the first roll-out (different batch size) must not leak into the second.
func TestADMIncrementalReuse(t *testing.T) {
	const m = 3
	f := newADMFixture(t, 51, smallADMConfig(m), onnx.ADMUnrolled)
	cfg := infer.RollConfig{Horizon: 4, Penalty: 0.2}
	big := testfix.RandStart(rand.New(rand.NewSource(1)), 17, m, f.obsDim, f.actDim, func(i int) int { return m })
	small := testfix.RandStart(rand.New(rand.NewSource(2)), 6, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	if _, err := f.inc.Rollout(f.pol, big, cfg, rand.New(rand.NewSource(4))); err != nil {
		t.Fatal(err)
	}
	inc := rollSeeded(t, f.inc, f.pol, small, cfg, 5)
	checkRef(t, "second roll-out vs reference", inc, f.pol, small, f.obsDim, f.actDim, cfg, 5, testfix.RefADMModel(f.adm))
}

// TestADMIncrementalGRUOpStep: the incremental engine on the step graph in
// the GRU-op form (onnx.ADMStepOptions.Form, the form meant for the CUDA
// provider's cuDNN RNN) matches the reference roll-out, without and with
// U^ADM and MC dropout, rows ending early, chunks, a batch cut into calls
// run by several workers, and its state bound (I/O binding) or copied.
func TestADMIncrementalGRUOpStep(t *testing.T) {
	const n, horizon, m = 20, 6, 4
	f := newADMFixture(t, 61, smallADMConfig(m), onnx.ADMUnrolled)
	for _, p := range []float64{0, testDropout} {
		step, err := onnx.ExportADMStepWith(f.adm, onnx.ADMStepOptions{Form: onnx.ADMGRUOp, Dropout: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref := testfix.RefADMModel(f.adm)
		if p > 0 {
			ref = testfix.RefADMDropModel(f.adm, p)
		}
		for _, sc := range boundCases {
			for _, b := range []string{infer.BindingOff, infer.BindingOn} {
				inc := openEngine(t, "GRU-op step", step, nil, infer.OpenADMIncremental, withBinding(sc.opts, b))
				for _, c := range []struct {
					name    string
					penalty float32
					chunk   int
				}{{"plain", 0, 0}, {"penalty-chunk6", 1.3, 6}} {
					t.Run(fmt.Sprintf("dropout%g/%s/binding-%s/%s", p, sc.name, b, c.name), func(t *testing.T) {
						start := testfix.RandStart(rand.New(rand.NewSource(3)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*3)%m })
						cfg := infer.RollConfig{Horizon: horizon, Penalty: c.penalty, ChunkRows: c.chunk, Done: doneOutside(1.5)}
						got := rollSeeded(t, inc, f.pol, start, cfg, 13)
						checkRef(t, "GRU-op step vs reference", got, f.pol, start, f.obsDim, f.actDim, cfg, 13, ref)
						if nd := countDone(got); nd == 0 || nd == n {
							t.Fatalf("the Done function ended %d of %d rows; the test wants some", nd, n)
						}
					})
				}
			}
		}
	}
}
