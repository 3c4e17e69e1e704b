package infer_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// TestEnginesInPiecesMatchReference runs every engine with a roll-out step
// cut into many small ONNX Runtime calls on concurrent workers (BatchRows 5,
// Workers 3: pieces of a few plans, rows whose m cached plans would straddle
// a piece boundary) and compares the transitions with the naive reference,
// with and without U^ADM, with mixed start lengths and rows ending early.
// The direct engine runs the packed graph, which orders rows by length
// inside the graph, and the unrolled one.
func TestEnginesInPiecesMatchReference(t *testing.T) {
	const n, m, horizon = 29, 4, 6
	f := newADMFixture(t, 61, smallADMConfig(m), onnx.ADMPacked)
	ref := testfix.RefADMModel(f.adm)
	opts := infer.Options{Threads: 1, Workers: 3, BatchRows: 5}
	unrolled, err := onnx.ExportADM(f.adm, onnx.ADMOptions{Form: onnx.ADMUnrolled}, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]func() (infer.Roller, error){
		"direct-packed":   func() (infer.Roller, error) { return infer.OpenADMDirect(f.admONNX, opts) },
		"direct-unrolled": func() (infer.Roller, error) { return infer.OpenADMDirect(unrolled, opts) },
		"incremental":     func() (infer.Roller, error) { return infer.OpenADMIncremental(f.stepONNX, opts) },
	}
	for _, name := range []string{"direct-packed", "direct-unrolled", "incremental"} {
		e, err := open[name]()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for _, penalty := range []float32{0, 0.9} {
			t.Run(fmt.Sprintf("%s/penalty%v", name, penalty), func(t *testing.T) {
				start := testfix.RandStart(rand.New(rand.NewSource(4)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*5)%m })
				cfg := infer.RollConfig{Horizon: horizon, Penalty: penalty, Done: doneOutside(1.5)}
				got := rollSeeded(t, e, f.pol, start, cfg, 12)
				want := checkRef(t, fmt.Sprintf("%s in pieces vs reference", name), got, f.pol, start, f.obsDim, f.actDim, cfg, 12, ref)
				if nd := countDone(want); nd == 0 || nd == n {
					t.Fatalf("the Done function ended %d of %d rows; the test wants some", nd, n)
				}
			})
		}
	}
}

// TestBenchRolloutCPUTime checks the CPU-time fields of the benchmark
// results: positive, PerCPUSecond = Transitions/CPUSeconds, and no more
// CPU time than the wall time allows on the machine's CPUs (plus slack for
// the clock granularity).
func TestBenchRolloutCPUTime(t *testing.T) {
	f := newADMFixture(t, 93, smallADMConfig(3), onnx.ADMPacked)
	res, err := infer.BenchRollout(infer.BenchConfig{Actor: f.actorONNX, ADM: f.admONNX, ADMStep: f.stepONNX,
		Rows: 300, Horizon: 4, Penalty: true, Threads: 1, Workers: 2, BatchRows: 64, Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !(r.CPUSeconds > 0) || r.PerCPUSecond != float64(r.Transitions)/r.CPUSeconds {
			t.Fatalf("%+v: want CPUSeconds > 0 and PerCPUSecond = Transitions/CPUSeconds", r)
		}
		if r.CPUSeconds > float64(runtime.NumCPU())*r.Seconds*2+0.05 {
			t.Fatalf("%+v: more CPU time than %d CPUs can give in the wall time", r, runtime.NumCPU())
		}
	}
}
