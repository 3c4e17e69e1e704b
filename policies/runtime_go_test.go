package policies

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
)

// TestGoActorChecksOpsFirst: a model with an op the pure-Go runtime lacks
// fails before decoding, with an error naming the op and the other runtime.
func TestGoActorChecksOpsFirst(t *testing.T) {
	g := onnx.NewGraph("bad", "")
	obs := g.Input(schema.Obs, onnx.Float, onnx.Batch, onnx.Fixed(4))
	g.Input(schema.Noise, onnx.Float, onnx.Batch, onnx.Fixed(4))
	g.Output(g.Op("Clip", []string{obs}), schema.Action, onnx.Float, onnx.Batch, onnx.Fixed(4))
	model, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(model)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newGoActor(model, info, 4, 4); err == nil || !strings.Contains(err.Error(), "cannot run op(s) Clip") {
		t.Fatalf("actor with Clip: %v", err)
	}
}

// TestGoActorPoolSharesOneProgram: a pool of pure-Go actors holds one
// compiled program with buffers per actor.
func TestGoActorPoolSharesOneProgram(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	a := models.NewActor(5, []float64{-1, -2, 0}, []float64{1, 0.5, 2}, []int{16, 16}, rng)
	model, err := onnx.ExportActor(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(model)
	if err != nil {
		t.Fatal(err)
	}
	as, err := newActors(RuntimeGo, model, info, a.ObsDim, a.ActDim, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := as[0].(goActor)
	for i, x := range as[1:] {
		if g := x.(goActor); g.a == first.a {
			t.Fatalf("actor %d is actor 0", i+1)
		}
	}
	obs, out := testfix.RandNormal(rng, 2*a.ObsDim), make([]float32, 2*a.ActDim)
	for i, x := range as {
		if err := x.act(obs, nil, out); err != nil {
			t.Fatalf("actor %d: %v", i, err)
		}
		x.close()
		if err := x.act(obs, nil, out); err != ErrClosed {
			t.Fatalf("actor %d after close: %v, want ErrClosed", i, err)
		}
	}
}

// TestGoPolicyActIntoNoAllocs: batch-1 Policy.ActInto on the pure-Go
// runtime allocates nothing once it has run.
func TestGoPolicyActIntoNoAllocs(t *testing.T) {
	f := newHopperFixture(t)
	p := openTestPolicy(t, f, false, Options{Runtime: RuntimeGo, Sessions: 1})
	rng := rand.New(rand.NewSource(9))
	obs, out := testfix.RandNormal(rng, 11), make([]float32, 3)
	if err := p.ActInto(out, obs, false); err != nil {
		t.Fatal(err)
	}
	var err error
	if allocs := testing.AllocsPerRun(200, func() { err = p.ActInto(out, obs, false) }); err != nil || allocs != 0 {
		t.Fatalf("Policy.ActInto: %v allocations per call (%v)", allocs, err)
	}
}
