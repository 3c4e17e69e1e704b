package devicetest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/admpo/admpo/device"
)

// testCapture checks a Capturer's graphs: a recorded sequence (kernels with
// scalar and buffer arguments, a product, a batched product, an Adam step
// whose constants come
// from a buffer) does nothing while it is recorded, and each replay equals
// the same sequence run directly, bit for bit, with the buffers' contents
// at replay time (new Adam constants uploaded between replays). Copies and
// syncs are refused while capturing; a freed graph is refused.
func testCapture(t *testing.T, c device.Capturer) {
	h := h{t, c}
	r := rand.New(rand.NewPCG(7, 7))
	const m, n, k = 33, 17, 9
	a0, b0, p0 := randn(r, m*k, 1), randn(r, k*n, 1), randn(r, m*n, 1)
	consts := func(step int) []float32 { return device.AdamK(step, 1e-2) }
	type bufs struct{ a, b, g, p, m, v, k, q device.Buffer }
	fresh := func() bufs {
		return bufs{h.up(a0), h.up(b0), h.alloc(device.Float32, m*n), h.up(p0),
			h.alloc(device.Float32, m*n), h.alloc(device.Float32, m*n), h.up(consts(1)), h.alloc(device.Float32, 3*m*n)}
	}
	// The sequence: g = 0.5·A·B; q_i = A_i·B_i for A's and B's three blocks
	// of k/3 columns and rows (a batched product); g += 0.25·p (axpy);
	// p ← Adam(p, g); scale A.
	queue := func(x bufs) {
		h.launch("fill", m*n, x.g, float32(0))
		if err := c.Gemm(false, false, m, n, k, 0.5, x.a, m, x.b, k, 0, x.g, m); err != nil {
			t.Fatal(err)
		}
		if err := c.GemmStridedBatched(false, false, m, n, k/3, 1, x.a, m, m*k/3, x.b, k, k/3, 0, x.q, m, m*n,
			3); err != nil {
			t.Fatal(err)
		}
		h.launch("axpy", m*n, float32(0.25), x.p, x.g)
		h.launch("adam_k", m*n, x.p, x.g, x.m, x.v, x.k)
		h.launch("scale", m*k, x.a, float32(0.9))
	}
	upload := func(x bufs, step int) {
		if err := c.Upload(x.k, consts(step)); err != nil {
			t.Fatal(err)
		}
	}
	// Directly, twice.
	want := fresh()
	for step := 1; step <= 2; step++ {
		upload(want, step)
		queue(want)
	}
	// Recorded once, replayed twice.
	got := fresh()
	if err := c.BeginCapture(); err != nil {
		t.Fatalf("begin capture: %v", err)
	}
	queue(got)
	if err := c.Upload(got.k, consts(1)); !errors.Is(err, device.ErrCapturing) {
		t.Errorf("upload while capturing: got %v, want ErrCapturing", err)
	}
	if err := c.Sync(); !errors.Is(err, device.ErrCapturing) {
		t.Errorf("sync while capturing: got %v, want ErrCapturing", err)
	}
	g, err := c.EndCapture()
	if err != nil {
		t.Fatalf("end capture: %v", err)
	}
	if p := h.down(got.p); !slices.Equal(p, p0) {
		t.Fatal("capturing ran the work: p changed before any replay")
	}
	for step := 1; step <= 2; step++ {
		upload(got, step)
		if err := g.Launch(); err != nil {
			t.Fatalf("graph launch %d: %v", step, err)
		}
	}
	for _, x := range []struct {
		name      string
		got, want device.Buffer
	}{{"p", got.p, want.p}, {"m", got.m, want.m}, {"v", got.v, want.v}, {"g", got.g, want.g}, {"A", got.a, want.a},
		{"q", got.q, want.q}} {
		if gv, wv := h.down(x.got), h.down(x.want); !slices.Equal(gv, wv) {
			t.Errorf("%s after two replays differs from two direct runs", x.name)
		}
	}
	if err := g.Free(); err != nil {
		t.Fatal(err)
	}
	if err := g.Launch(); !errors.Is(err, device.ErrFreed) {
		t.Errorf("launch of a freed graph: got %v, want ErrFreed", err)
	}
	if _, err := c.EndCapture(); err == nil {
		t.Error("end capture without a capture: no error")
	}
	h.free(want.a, want.b, want.g, want.p, want.m, want.v, want.k, want.q, got.a, got.b, got.g, got.p, got.m, got.v,
		got.k, got.q)
}
