package cpukern

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// splitmixRef is SplitMix64's output function, written here independently of
// the kernel.
func splitmixRef(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// dropoutFillRef is DropoutFill's closed form, flag by flag: draw j = e/2+1,
// splitmix64(base + j·golden), half e%2, dropped when below thr, stored at
// (e/width)·stride + e%width.
func dropoutFillRef(base uint64, thr uint32, dst []float32, n, width, stride int) {
	for e := 0; e < n; e++ {
		bits := uint32(splitmixRef(base+uint64(e/2+1)*0x9e3779b97f4a7c15) >> (32 * uint(e%2)))
		v := float32(1)
		if bits < thr {
			v = 0
		}
		dst[(e/width)*stride+e%width] = v
	}
}

// TestDropoutFillMatchesClosedForm: on every path, DropoutFill gives the
// closed form's flags bit for bit for block layouts with odd widths (blocks
// that start in the middle of a draw), width 1, short and ragged counts and
// gaps between blocks, at thresholds that drop nothing, half or nearly all
// and at thresholds equal to some flag's bits (the comparison is strict);
// and writes nothing but the flag positions (the rest of dst keeps its 7s,
// including past the last flag).
func TestDropoutFillMatchesClosedForm(t *testing.T) {
	type layout struct{ n, width, stride int }
	cases := []layout{
		{1, 1, 1}, {2, 1, 1}, {3, 1, 2}, {999, 1, 2}, {7, 7, 1}, {15, 15, 15}, {16, 16, 16}, {17, 17, 20},
		{9, 3, 5}, {10, 3, 4}, {5, 5, 9}, {31, 31, 31}, {33, 11, 12}, {47, 47, 50}, {100, 33, 40},
		{800, 200, 200}, {800, 200, 1000}, {600, 200, 2600}, {799, 200, 201}, {1001, 7, 9}, {2000, 13, 13},
		{257, 17, 23}, {255, 255, 1}, {1000, 999, 1000}, {123, 1000, 5}, // one block: any stride
	}
	for w := 1; w <= 40; w++ { // every width against a multi-block ragged n
		cases = append(cases, layout{3*w + w/2, w, w + w%3})
	}
	thrs := []uint32{0, 1, 1 << 31, 0x19999999, 0xfffffffe, 0xffffffff}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(5))
		for _, c := range cases {
			base := rng.Uint64()
			// Thresholds equal to the bits of the first, a middle and the
			// last flag: those flags are kept (dropped only below thr).
			ts := append([]uint32(nil), thrs...)
			for _, e := range []int{0, c.n / 2, c.n - 1} {
				ts = append(ts, uint32(splitmixRef(base+uint64(e/2+1)*0x9e3779b97f4a7c15)>>(32*uint(e%2))))
			}
			for _, thr := range ts {
				blocks := (c.n-1)/c.width + 1
				need := (blocks-1)*c.stride + c.n - (blocks-1)*c.width // the last flag's index + 1
				for _, pad := range []int{0, 5} {
					got, want := make([]float32, need+pad), make([]float32, need+pad)
					for i := range got {
						got[i], want[i] = 7, 7
					}
					DropoutFill(base, thr, got, c.n, c.width, c.stride)
					dropoutFillRef(base, thr, want, c.n, c.width, c.stride)
					sameBits(t, fmt.Sprintf("n %d width %d stride %d thr %#x flags", c.n, c.width, c.stride, thr), got, want)
				}
			}
		}
	})
}

// TestDropoutFillThresholds: thr 0 keeps every flag, thr 0xffffffff drops
// every flag here (none of these halves is 0xffffffff), thr 2³¹ about half.
func TestDropoutFillThresholds(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		const n = 4001
		dst := make([]float32, n)
		count := func(thr uint32) (zeros int) {
			DropoutFill(42, thr, dst, n, 200, 200)
			for _, v := range dst {
				if v == 0 {
					zeros++
				} else if v != 1 {
					t.Fatalf("flag %v", v)
				}
			}
			return zeros
		}
		if z := count(0); z != 0 {
			t.Fatalf("thr 0 dropped %d of %d", z, n)
		}
		if z := count(0xffffffff); z != n {
			t.Fatalf("thr 0xffffffff dropped %d of %d", z, n)
		}
		if z := count(1 << 31); z < n/2-200 || z > n/2+200 {
			t.Fatalf("thr 2^31 dropped %d of %d", z, n)
		}
	})
}

// TestDropoutFillRejects: bad layouts and short slices panic before the C
// kernel runs, and n = 0 writes nothing.
func TestDropoutFillRejects(t *testing.T) {
	DropoutFill(1, 1<<31, nil, 0, 5, 5)
	for _, c := range []struct {
		len, n, width, stride int
		msg                   string
	}{
		{10, 10, 0, 10, "blocks of"}, {10, -1, 5, 5, "blocks of"}, {20, 10, 5, 4, "stride"},
		{9, 10, 10, 0, "needs 10"}, {12, 10, 5, 8, "needs 13"}, {100, 3, 1, 1 << 62, "stride"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.msg) {
					t.Errorf("len %d n %d width %d stride %d: panic %v, want one with %q", c.len, c.n, c.width, c.stride, r, c.msg)
				}
			}()
			DropoutFill(1, 1<<31, make([]float32, c.len), c.n, c.width, c.stride)
		}()
	}
}

// BenchmarkDropoutFill fills one [4, 256, 200] mask row by row (an engine's
// chunk of 256 plans) on each path.
func BenchmarkDropoutFill(b *testing.B) {
	const blocks, rows, hidden = 4, 256, 200
	mask := make([]float32, blocks*rows*hidden)
	defer func() { _ = Use(Detected()) }()
	for _, isa := range Supported() {
		b.Run(isa.String(), func(b *testing.B) {
			if err := Use(isa); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(mask) * 4))
			for i := 0; i < b.N; i++ {
				for q := 0; q < rows; q++ {
					DropoutFill(uint64(i*rows+q), 0x1999999a, mask[q*hidden:], blocks*hidden, hidden, rows*hidden)
				}
			}
		})
	}
}
