package infer

import (
	"math/rand"
	"testing"
)

// TestDropoutFillLayout checks dropoutFill against the generator's closed
// form (flag e is half e%2 of splitmix64(base + (e/2+1)·golden), dropped when
// below the threshold) at the strided places the engines' masks use, and
// that it writes nothing else. Odd widths start blocks in the middle of a
// draw.
func TestDropoutFillLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, c := range []struct{ n, width, stride int }{
		{1, 1, 1}, {7, 7, 1}, {800, 200, 1000}, {800, 200, 200}, {9, 3, 5}, {10, 3, 4}, {600, 200, 2600}, {5, 5, 9},
		{1001, 7, 9}, {2000, 13, 13}, {999, 1, 2},
	} {
		base, thr := rng.Uint64(), uint32(1<<31) // p = 0.5: neighbouring flags differ often
		last := ((c.n-1)/c.width)*c.stride + (c.n-1)%c.width
		dst := make([]float32, last+1+3)
		for i := range dst {
			dst[i] = 7
		}
		dropoutFill(base, thr, dst, c.n, c.width, c.stride)
		want := make([]float32, len(dst))
		for i := range want {
			want[i] = 7
		}
		for e := 0; e < c.n; e++ {
			bits := splitmix64(base+uint64(e/2+1)*golden) >> (32 * uint(e%2))
			v := float32(1)
			if uint32(bits) < thr {
				v = 0
			}
			want[(e/c.width)*c.stride+e%c.width] = v
		}
		for i := range dst {
			if dst[i] != want[i] {
				t.Fatalf("n %d width %d stride %d: dst[%d] = %v, want %v", c.n, c.width, c.stride, i, dst[i], want[i])
			}
		}
	}
}

// BenchmarkDropoutFill fills one [4, 256, 200] mask row by row, as an
// engine does for a chunk of 256 plans.
func BenchmarkDropoutFill(b *testing.B) {
	const blocks, rows, hidden = 4, 256, 200
	mask := make([]float32, blocks*rows*hidden)
	thr := dropThreshold(0.1)
	b.SetBytes(int64(len(mask) * 4))
	for i := 0; i < b.N; i++ {
		for q := 0; q < rows; q++ {
			dropoutFill(uint64(i*rows+q), thr, mask[q*hidden:], blocks*hidden, hidden, rows*hidden)
		}
	}
}
