package iobind_test

import (
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/infer/iobind"
)

// open loads the gather model of width w into an onnxruntime_go session on
// the CPU and attaches to it.
func open(t *testing.T, w int) (*ort.DynamicAdvancedSession, *iobind.Session) {
	t.Helper()
	if err := infer.Init(); err != nil {
		t.Skipf("ONNX Runtime: %v", err)
	}
	lib, err := infer.LibraryPath()
	if err != nil {
		t.Fatal(err)
	}
	model, err := iobind.GatherModel(w)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model,
		[]string{iobind.GatherX, iobind.GatherA, iobind.GatherB}, []string{iobind.GatherOutA, iobind.GatherOutB}, nil)
	if err != nil {
		t.Fatalf("gather model: %v", err)
	}
	t.Cleanup(func() { s.Destroy() })
	b, err := iobind.Attach(s, lib)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// TestSessionPointer: the OrtSession that Attach finds behind an
// onnxruntime_go session is that session (its input and output counts
// through the C API are the gather model's 3 and 2).
func TestSessionPointer(t *testing.T) {
	_, s := open(t, 3)
	if in, out := s.Counts(); in != 3 || out != 2 {
		t.Fatalf("C API counts %d inputs and %d outputs, want 3 and 2", in, out)
	}
}

// must returns v, or panics with err (a set-up step failed).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGatherBound runs the gather model on CPU buffers bound to its inputs
// and outputs (host memory from NewHost and from the session's allocator),
// twice with other indices and shapes, and checks every output row against
// the input row it names; then that every C object is released.
func TestGatherBound(t *testing.T) {
	const w = 3
	base := iobind.Live()
	_, s := open(t, w)
	mem := must(s.NewMemory(iobind.CPU, 0))
	alloc := must(s.NewAllocator(mem))
	xb := must(iobind.NewHost(5 * w * 4))
	ib := must(iobind.NewHost(8 * 8))
	ob := must(alloc.Alloc(8 * w * 4)) // both outputs, one after the other
	x := xb.Float32s()
	for i := range x {
		x[i] = float32(i) + 0.5
	}
	b := must(s.NewBinding())
	for _, c := range []struct{ a, b []int64 }{{[]int64{4, 0, 0}, []int64{2, 1}}, {[]int64{1}, []int64{3, 3, 0, 4, 2}}, {nil, []int64{0}}} {
		idx := ib.Int64s()
		copy(idx, c.a)
		copy(idx[len(c.a):], c.b)
		na, nb := int64(len(c.a)), int64(len(c.b))
		vals := []*iobind.Value{
			must(iobind.NewValue(mem, xb, iobind.Float32, 0, 5, w)),
			must(iobind.NewValue(mem, ib, iobind.Int64, 0, na)),
			must(iobind.NewValue(mem, ib, iobind.Int64, len(c.a), nb)),
			must(iobind.NewValue(mem, ob, iobind.Float32, 0, na, w)),
			must(iobind.NewValue(mem, ob, iobind.Float32, len(c.a)*w, nb, w)),
		}
		for i, n := range []string{iobind.GatherX, iobind.GatherA, iobind.GatherB} {
			if err := b.BindInput(n, vals[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i, n := range []string{iobind.GatherOutA, iobind.GatherOutB} {
			if err := b.BindOutput(n, vals[3+i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.SyncInputs(); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(); err != nil {
			t.Fatal(err)
		}
		if err := b.SyncOutputs(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			v.Release()
		}
		out := ob.Float32s()
		for q, r := range append(append([]int64{}, c.a...), c.b...) {
			for k := 0; k < w; k++ {
				if got, want := out[q*w+k], x[int(r)*w+k]; got != want {
					t.Fatalf("indices %v, %v: output row %d col %d = %v, want x[%d] = %v", c.a, c.b, q, k, got, r, want)
				}
			}
		}
	}
	b.Release()
	for _, buf := range []*iobind.Buffer{xb, ib, ob} {
		if err := buf.Free(); err != nil {
			t.Fatal(err)
		}
	}
	alloc.Release()
	mem.Release()
	if n := iobind.Live() - base; n != 0 {
		t.Fatalf("%d C objects left unreleased", n)
	}
}

// TestErrors: bad shapes, offsets, kinds and names give errors that say
// what is wrong, and nothing panics.
func TestErrors(t *testing.T) {
	base := iobind.Live()
	_, s := open(t, 2)
	mem := must(s.NewMemory(iobind.CPU, 0))
	defer mem.Release()
	buf := must(iobind.NewHost(16))
	defer buf.Free()
	want := func(err error, sub string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), sub) {
			t.Errorf("error %v, want one containing %q", err, sub)
		}
	}
	_, err := iobind.NewValue(mem, buf, iobind.Float32, 0, 2, 3)
	want(err, "needs 24 bytes of a 16-byte buffer")
	_, err = iobind.NewValue(mem, buf, iobind.Float32, 3, 2)
	want(err, "needs 20 bytes")
	_, err = iobind.NewValue(mem, buf, iobind.Float32, 0, -1)
	want(err, "negative dimension")
	_, err = iobind.NewValue(mem, buf, iobind.Float32, -1, 1)
	want(err, "offset -1")
	_, err = iobind.NewValue(mem, buf, iobind.Type(99), 0, 1)
	want(err, "unknown element type")
	_, err = iobind.NewHost(0)
	want(err, "0 bytes")
	_, err = s.NewMemory(iobind.CPU, 1)
	want(err, "no such device")
	cuda := must(s.NewMemory(iobind.CUDA, 0))
	_, err = iobind.NewValue(cuda, buf, iobind.Float32, 0, 1)
	want(err, "memory info Cuda for a buffer of Cpu memory")
	_, err = s.NewAllocator(cuda) // a CPU session has no CUDA allocator
	want(err, "allocator for Cuda memory")
	cuda.Release()
	_, err = s.InputMemory(0) // the CPU provider, added the old way: no provider device
	want(err, "input 0")
	_, err = s.InputMemory(7)
	want(err, "no such input")
	b := must(s.NewBinding())
	v := must(iobind.NewValue(mem, buf, iobind.Float32, 0, 2, 2))
	want(b.BindInput("nope", v), "binding input nope")
	want(b.Run(), "RunWithBinding") // nothing bound
	v.Release()
	want(b.BindInput(iobind.GatherX, v), "value is released")
	b.Release()
	want(b.Run(), "binding is released")
	if n := iobind.Live() - base; n != 2 { // mem and buf, released by the deferred calls
		t.Errorf("%d C objects left, want 2 (the memory info and the buffer)", n)
	}
	if _, err := iobind.GatherModel(0); err == nil {
		t.Error("GatherModel(0) gave no error")
	}
}
