package infer_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/infer/iobind"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// boundCases are the splits the bound path is compared under: one call
// per step, and the batch cut into calls of 5 plans run by three workers.
var boundCases = []struct {
	name string
	opts infer.Options
}{{"one-call", infer.Options{Threads: 1, Workers: 1, BatchRows: 1 << 20}}, {"split", infer.Options{Threads: 1, Workers: 3, BatchRows: 5}}}

// withBinding is opts with Binding b.
func withBinding(opts infer.Options, b string) infer.Options {
	opts.Binding = b
	return opts
}

// TestADMIncrementalBoundMatchesUnbound: the incremental engine on bound
// buffers (hidden states in ONNX Runtime's memory, moved by the gather
// graph) gives bit for bit the transitions of the unbound engine (states
// copied through Go memory) with the same split and seed: for several m,
// with and without U^ADM, with MC dropout, rows ending early, chunks and a
// second roll-out on the same engine; for m = 4 also the reference's. Every
// C object of the bound path is released on Close.
func TestADMIncrementalBoundMatchesUnbound(t *testing.T) {
	const n, horizon = 23, 7
	base := iobind.Live()
	for _, m := range []int{1, 2, 4, 5} {
		f := newADMFixture(t, int64(80+m), smallADMConfig(m), onnx.ADMGRUOp)
		drop, err := onnx.ExportADMStepWith(f.adm, onnx.ADMStepOptions{Dropout: testDropout}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range boundCases {
			for _, c := range []struct {
				name    string
				model   []byte
				penalty float32
				chunk   int
			}{{"plain", f.stepONNX, 0, 0}, {"penalty", f.stepONNX, 1.3, 0}, {"penalty-chunk6", f.stepONNX, 1.3, 6}, {"dropout-penalty", drop, 1.3, 0}} {
				t.Run(fmt.Sprintf("m%d/%s/%s", m, sc.name, c.name), func(t *testing.T) {
					off := openEngine(t, "unbound", c.model, nil, infer.OpenADMIncremental, withBinding(sc.opts, infer.BindingOff))
					on, err := infer.OpenADMIncremental(c.model, withBinding(sc.opts, infer.BindingOn))
					if err != nil {
						t.Fatalf("open bound: %v", err)
					}
					defer on.Close()
					if off.Bound() || !on.Bound() {
						t.Fatalf("Bound() is %v with Binding off and %v with on", off.Bound(), on.Bound())
					}
					start := testfix.RandStart(rand.New(rand.NewSource(int64(m))), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + (i*3)%m })
					cfg := infer.RollConfig{Horizon: horizon, Penalty: c.penalty, ChunkRows: c.chunk, Done: doneOutside(1.5)}
					for round, seed := range []int64{11, 12} { // a second roll-out reuses the buffers
						want := rollSeeded(t, off, f.pol, start, cfg, seed)
						got := rollSeeded(t, on, f.pol, start, cfg, seed)
						if d := testfix.DiffTransitions(got, want, f.obsDim, f.actDim, 0); d != "" {
							t.Fatalf("round %d: bound vs unbound: %s", round, d)
						}
						if nd := countDone(want); nd == 0 || nd == n {
							t.Fatalf("the Done function ended %d of %d rows; the test wants some", nd, n)
						}
						if m == 4 && c.name == "penalty" {
							checkRef(t, "bound vs reference", got, f.pol, start, f.obsDim, f.actDim, cfg, seed, testfix.RefADMModel(f.adm))
						}
					}
				})
			}
		}
	}
	if t.Failed() {
		return
	}
	// The engines close in the subtests' cleanups, which have run.
	if d := iobind.Live() - base; d != 0 {
		t.Fatalf("%d C objects of the bound path left after Close", d)
	}
}

// TestADMIncrementalBindingChoice: Binding auto binds only on the CUDA
// provider (so on the CPU the engine is unbound), an unknown value is an
// error, and Binding on with a step graph exported without fresh_rows
// fails to open, saying why.
func TestADMIncrementalBindingChoice(t *testing.T) {
	f := newADMFixture(t, 90, smallADMConfig(3), onnx.ADMGRUOp)
	for _, b := range []string{"", infer.BindingAuto} {
		e := openEngine(t, "auto", f.stepONNX, nil, infer.OpenADMIncremental, withBinding(testOpts, b))
		if e.Bound() || e.BindingError() != nil {
			t.Errorf("Binding %q on the CPU: Bound %v, error %v; want unbound, no error", b, e.Bound(), e.BindingError())
		}
	}
	if _, err := infer.OpenADMIncremental(f.stepONNX, withBinding(testOpts, "sometimes")); err == nil || !strings.Contains(err.Error(), `unknown binding "sometimes"`) {
		t.Errorf("Binding sometimes: error %v", err)
	}
	old := dropMetadata(t, f.stepONNX, "fresh_rows")
	if _, err := infer.OpenADMIncremental(old, withBinding(testOpts, infer.BindingOn)); err == nil || !strings.Contains(err.Error(), "fresh_rows") {
		t.Errorf("Binding on, graph without fresh_rows: error %v, want one naming fresh_rows", err)
	}
	e := openEngine(t, "old graph, off", old, nil, infer.OpenADMIncremental, withBinding(testOpts, infer.BindingOff))
	if e.Bound() {
		t.Error("Binding off: bound")
	}
}

// dropMetadata renames the metadata key in an exported model (same length,
// so the protobuf stays valid), as if the exporter had not written it.
func dropMetadata(t *testing.T, model []byte, key string) []byte {
	t.Helper()
	if !bytes.Contains(model, []byte(key)) {
		t.Fatalf("the model has no %q", key)
	}
	return bytes.ReplaceAll(model, []byte(key), []byte(key[:len(key)-1]+"_"))
}

// TestBenchRolloutBinding: the benchmark passes Binding to the incremental
// engine and reports where its states were (State), and the direct engine
// has no State.
func TestBenchRolloutBinding(t *testing.T) {
	f := newADMFixture(t, 94, smallADMConfig(3), onnx.ADMPacked)
	for _, c := range []struct{ binding, want string }{{infer.BindingOn, "bound"}, {infer.BindingOff, "copied"}, {"", "copied"}} {
		res, err := infer.BenchRollout(infer.BenchConfig{Actor: f.actorONNX, ADM: f.admONNX, ADMStep: f.stepONNX,
			Rows: 40, Horizon: 2, Threads: 1, Workers: 2, BatchRows: 16, Binding: c.binding})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			want := c.want
			if r.Engine == "direct" {
				want = ""
			}
			if r.State != want {
				t.Errorf("Binding %q: %s engine's State %q, want %q", c.binding, r.Engine, r.State, want)
			}
		}
	}
}
