package rollout

import (
	"math"
	"slices"
	"testing"
)

// TestDropoutKeying pins the MC-dropout keying that infer's engines and the
// device kernels (roll_drop_base) share: DropoutBase's states for a few keys
// (a negative seed, rows past 2¹⁶ and 2³⁰), DropThreshold's ends and middle,
// and 16 flags of one key at p 0.5. The values were recorded when the
// keying moved here from infer (its roll-outs bit-identical before and
// after); a change breaks every recorded roll-out with dropout.
func TestDropoutKeying(t *testing.T) {
	for _, c := range []struct {
		seed         int64
		step, row, k int
		want         uint64
	}{
		{0, 0, 0, 0, 0xc213c59a64d9cf09},
		{42, 3, 8192, 2, 0x2a2cd0f53dae0f07},
		{-5, 14, 98304, 5, 0x8ed15dea9a57fc1e},
		{math.MaxInt64, 1, 1 << 30, 1, 0xaaeced01531406d7},
	} {
		if got := DropoutBase(c.seed, c.step, c.row, c.k); got != c.want {
			t.Errorf("DropoutBase(%d, %d, %d, %d) = %#x, want %#x", c.seed, c.step, c.row, c.k, got, c.want)
		}
	}
	for _, c := range []struct {
		p    float64
		want uint32
	}{{0, 0}, {0.5, 1 << 31}, {1, math.MaxUint32}, {2, math.MaxUint32}} {
		if got := DropThreshold(c.p); got != c.want {
			t.Errorf("DropThreshold(%v) = %#x, want %#x", c.p, got, c.want)
		}
	}
	keep := make([]float32, 16)
	DropoutKeep(42, 3, 8192, 2, 0.5, keep)
	if want := []float32{0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1}; !slices.Equal(keep, want) {
		t.Errorf("DropoutKeep(42, 3, 8192, 2, 0.5) = %v, want %v", keep, want)
	}
}
