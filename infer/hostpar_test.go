package infer_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// TestRolloutHostLoopsInParallel rolls out batches big enough for the
// roll-out's host loops to run on several goroutines (GOMAXPROCS 4, chunks
// of 3000 and 1700 rows) with every engine: in the split they take with
// CUDA (one worker, one call per step; the incremental engine also on bound
// buffers), where the loops run in parallel, with MC dropout too, and in the
// CPU split (several workers), where they stay on one goroutine; with and
// without U^ADM and a Done function. Each roll-out must match the naive
// reference and be bit-for-bit the roll-out of the same engine with
// GOMAXPROCS 1 (every host loop on one goroutine).
func TestRolloutHostLoopsInParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("large batches")
	}
	const n, m, horizon = 4700, 3, 3
	f := newADMFixture(t, 71, smallADMConfig(m), onnx.ADMPacked)
	ref := testfix.RefADMModel(f.adm)
	start := testfix.RandStart(rand.New(rand.NewSource(5)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*7)%m })
	cudaSplit := infer.Options{Threads: 1, Workers: 1, BatchRows: 1 << 30}
	bound := cudaSplit
	bound.Binding = infer.BindingOn
	dDrop, incDrop := dropEngines(t, f, onnx.ADMPacked, testDropout, cudaSplit)
	_, incDropBound := dropEngines(t, f, onnx.ADMPacked, testDropout, bound)
	dropRef := testfix.RefADMDropModel(f.adm, testDropout)
	engines := []struct {
		name string
		open func() (infer.Roller, error)
	}{
		{"direct-dropout-one-call", func() (infer.Roller, error) { return dDrop, nil }},
		{"incremental-dropout-one-call", func() (infer.Roller, error) { return incDrop, nil }},
		{"incremental-dropout-bound", func() (infer.Roller, error) { return incDropBound, nil }},
		{"direct", func() (infer.Roller, error) { return infer.OpenADMDirect(f.admONNX, infer.Options{Workers: 2}) }},
		{"direct-one-call", func() (infer.Roller, error) { return infer.OpenADMDirect(f.admONNX, cudaSplit) }},
		{"incremental", func() (infer.Roller, error) { return infer.OpenADMIncremental(f.stepONNX, infer.Options{Workers: 2}) }},
		{"incremental-one-call", func() (infer.Roller, error) { return infer.OpenADMIncremental(f.stepONNX, cudaSplit) }},
		{"incremental-bound", func() (infer.Roller, error) { return infer.OpenADMIncremental(f.stepONNX, bound) }},
	}
	for _, eng := range engines {
		e, err := eng.open()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for _, penalty := range []float32{0, 0.9} {
			for _, done := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/penalty%v/done%v", eng.name, penalty, done), func(t *testing.T) {
					cfg := infer.RollConfig{Horizon: horizon, Penalty: penalty, ChunkRows: 3000}
					if done {
						cfg.Done = doneOutside(1.5)
					}
					prev := runtime.GOMAXPROCS(4)
					par := rollSeeded(t, e, f.pol, start, cfg, 21)
					runtime.GOMAXPROCS(1)
					one := rollSeeded(t, e, f.pol, start, cfg, 21)
					runtime.GOMAXPROCS(prev)
					if d := testfix.DiffTransitions(par, one, f.obsDim, f.actDim, 0); d != "" {
						t.Fatalf("GOMAXPROCS 4 vs 1: %s", d)
					}
					mod := ref
					if strings.Contains(eng.name, "dropout") {
						mod = dropRef
					}
					want := checkRef(t, eng.name+" vs reference", par, f.pol, start, f.obsDim, f.actDim, cfg, 21, mod)
					if nd := countDone(want); done && (nd == 0 || nd == want.N) {
						t.Fatalf("the Done function ended %d of %d transitions' rows; the test wants some", nd, want.N)
					}
				})
			}
		}
	}
}
