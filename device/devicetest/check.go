package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/admpo/admpo/device"
)

// h wraps a Device for tests: every failure ends the test.
type h struct {
	t testing.TB
	d device.Device
}

func (h h) alloc(t device.Type, n int) device.Buffer {
	h.t.Helper()
	b, err := h.d.Alloc(t, n)
	if err != nil {
		h.t.Fatalf("alloc %v %d: %v", t, n, err)
	}
	// Freed at the end of the test unless freed before (then Free fails,
	// which is fine here).
	h.t.Cleanup(func() { _ = h.d.Free(b) })
	return b
}

func (h h) up(x []float32) device.Buffer {
	h.t.Helper()
	b := h.alloc(device.Float32, len(x))
	if err := h.d.Upload(b, x); err != nil {
		h.t.Fatalf("upload: %v", err)
	}
	return b
}

func (h h) upInt(x []int32) device.Buffer {
	h.t.Helper()
	b := h.alloc(device.Int32, len(x))
	if err := h.d.UploadInt32(b, x); err != nil {
		h.t.Fatalf("upload int32: %v", err)
	}
	return b
}

func (h h) down(b device.Buffer) []float32 {
	h.t.Helper()
	x := make([]float32, b.Len())
	if err := h.d.Download(x, b); err != nil {
		h.t.Fatalf("download: %v", err)
	}
	return x
}

func (h h) launch(name string, n int, args ...any) {
	h.t.Helper()
	if err := h.d.Launch(name, n, args...); err != nil {
		h.t.Fatalf("launch %s: %v", name, err)
	}
}

func (h h) free(bs ...device.Buffer) {
	h.t.Helper()
	for _, b := range bs {
		if err := h.d.Free(b); err != nil {
			h.t.Fatalf("free: %v", err)
		}
	}
}

// randn returns n normal float32 values times s.
func randn(r *rand.Rand, n int, s float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * s)
	}
	return x
}

// compare fails t when some got[i] differs from want[i] by more than
// rtol·|want[i]| + atol. NaN must match NaN.
func compare(t testing.TB, what string, got []float32, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				if bad++; bad <= 5 {
					t.Errorf("%s[%d] = %v, want %v", what, i, g, w)
				}
			}
			continue
		}
		if math.Abs(g-w) > rtol*math.Abs(w)+atol {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %.9g, want %.9g (diff %.3g)", what, i, g, w, g-w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(want))
	}
}

// maxAbs is the largest |x[i]|.
func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func sizeName(n int) string { return fmt.Sprintf("n=%d", n) }

// CloseTo fails where |got - want| > tol·max|want| (want is the CPU's
// result), but for a fraction outliers of the values within
// abs + tol·max|want|; it returns the largest difference over max|want|.
// Device tests comparing with the CPU path (nn, sacdevtest) share it.
func CloseTo(t testing.TB, what string, got, want []float32, tol, outliers, abs float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	scale = max(scale, 1e-30)
	over, bad, worst := 0, 0, 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		worst = max(worst, d/scale)
		if d <= tol*scale {
			continue
		}
		over++
		if outliers > 0 && d <= abs+tol*scale {
			continue
		}
		if bad++; bad <= 3 {
			t.Errorf("%s[%d] = %.9g, CPU %.9g (diff %.3g, scale %.3g)", what, i, got[i], want[i], d, scale)
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(want))
	}
	if float64(over) > outliers*float64(len(want)) {
		t.Errorf("%s: %d of %d values differ by more than %.3g of the largest (allowed: %.3g of them)",
			what, over, len(want), tol, outliers)
	}
	return worst
}
