package infer

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// sliceGraph returns a one-Slice graph over x [batch, 3]: its end is
// Shape(x)'s first value (computed in the graph) when computed, else an
// initializer; constNode makes it a Constant node's output instead (a
// float one: the graphs are only read here, never run).
func sliceGraph(t *testing.T, computed, constNode bool) []byte {
	t.Helper()
	g := onnx.NewGraph("slice", "")
	x := g.Input("x", onnx.Float, onnx.Batch, onnx.Fixed(3))
	zero := g.Int64s("zero", []int64{1}, []int64{0})
	end := g.Int64s("end", []int64{1}, []int64{2})
	switch {
	case computed:
		end = g.Op("Shape", []string{x}, onnx.AttrInt("end", 1))
	case constNode:
		end = g.Op("Constant", nil, onnx.AttrTensor("value", []int64{1}, []float32{2}))
	}
	g.Output(g.Op("Slice", []string{x, zero, end, zero}), "y", onnx.Float, onnx.Batch, onnx.Fixed(3))
	b, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCUDARefusesDataDependentSlice: with the CUDA provider a graph with a
// Slice whose bounds are computed in the graph (the packed and step graphs
// before their rewrite) is refused with an error naming the Slice and the
// way out; Slices with initializer or Constant bounds, every ADM graph form
// and the step graph exported now, and every graph on the CPU pass; bytes
// that are no model are an error.
func TestCUDARefusesDataDependentSlice(t *testing.T) {
	cuda, cpu := Options{Provider: "CUDA"}, Options{}
	if err := cudaRunsGraph(cuda, sliceGraph(t, true, false)); err == nil || !strings.Contains(err.Error(), "export the graph again") || !strings.Contains(err.Error(), "Slice") {
		t.Errorf("cuda, computed Slice end: error %v, want a refusal", err)
	}
	if err := cudaRunsGraph(cpu, sliceGraph(t, true, false)); err != nil {
		t.Errorf("cpu, computed Slice end: %v", err)
	}
	if err := cudaRunsGraph(cuda, sliceGraph(t, false, false)); err != nil {
		t.Errorf("cuda, initializer Slice end: %v", err)
	}
	if err := cudaRunsGraph(cuda, sliceGraph(t, false, true)); err != nil {
		t.Errorf("cuda, Constant Slice end: %v", err)
	}
	if err := cudaRunsGraph(cuda, []byte{0xff, 0xff}); err == nil || !strings.Contains(err.Error(), "reading the graph") {
		t.Errorf("cuda, not a model: error %v", err)
	}
	a, err := models.NewADM(models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 2, M: 3}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []float64{0, 0.1} {
		for _, f := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled, onnx.ADMPacked} {
			b, err := onnx.ExportADM(a, onnx.ADMOptions{Form: f, Dropout: p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := cudaRunsGraph(cuda, b); err != nil {
				t.Errorf("cuda, %v dropout %v: %v", f, p, err)
			}
		}
		b, err := onnx.ExportADMStepWith(a, onnx.ADMStepOptions{Dropout: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := cudaRunsGraph(cuda, b); err != nil {
			t.Errorf("cuda, step dropout %v: %v", p, err)
		}
	}
}
