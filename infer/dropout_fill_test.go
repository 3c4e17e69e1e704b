package infer

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/rollout"
)

// splitmix64 is SplitMix64's output function of state z, and golden its
// increment: the generator's closed form, written here for the tests.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const golden = 0x9e3779b97f4a7c15

// TestDropoutFillLayout checks dropoutFill against the generator's closed
// form (flag e is half e%2 of splitmix64(base + (e/2+1)·golden), dropped when
// below the threshold) at the strided places the engines' masks use, and
// that it writes nothing else. Odd widths start blocks in the middle of a
// draw. The former Go loop (dropoutFillGo, the benchmark's reference) is
// checked the same way.
func TestDropoutFillLayout(t *testing.T) {
	for _, fill := range []struct {
		name string
		fn   func(base uint64, thr uint32, dst []float32, n, width, stride int)
	}{{"dropoutFill", dropoutFill}, {"dropoutFillGo", dropoutFillGo}} {
		t.Run(fill.name, func(t *testing.T) { testDropoutFillLayout(t, fill.fn) })
	}
}

func testDropoutFillLayout(t *testing.T, dropoutFill func(base uint64, thr uint32, dst []float32, n, width, stride int)) {
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

// dropoutFillGo is the Go loop that dropoutFill (now the C kernel
// cpukern.DropoutFill) replaced, kept as the benchmark's reference: it walks
// the blocks and their units without dividing, two flags per 64-bit draw.
func dropoutFillGo(base uint64, thr uint32, dst []float32, n, width, stride int) {
	s := base
	var bits uint64 // the last draw; its upper half is unused while e is odd
	for e, off := 0, 0; e < n; off += stride {
		block := dst[off : off+min(width, n-e)]
		i := 0
		if e&1 == 1 {
			block[0] = keepFlag(uint32(bits>>32), thr)
			i = 1
		}
		for ; i+1 < len(block); i += 2 {
			s += golden
			bits = splitmix64(s)
			block[i] = keepFlag(uint32(bits), thr)
			block[i+1] = keepFlag(uint32(bits>>32), thr)
		}
		if i < len(block) {
			s += golden
			bits = splitmix64(s)
			block[i] = keepFlag(uint32(bits), thr)
		}
		e += len(block)
	}
}

// keepFlag is 0 (drop) when the 32 random bits r fall below thr, else 1.
func keepFlag(r, thr uint32) float32 {
	if r < thr {
		return 0
	}
	return 1
}

// BenchmarkDropoutFill fills one [4, 256, 200] mask row by row, as an
// engine does for a chunk of 256 plans.
func BenchmarkDropoutFill(b *testing.B) { benchmarkDropoutFill(b, dropoutFill) }

// BenchmarkDropoutFillGo is BenchmarkDropoutFill with the former Go loop.
func BenchmarkDropoutFillGo(b *testing.B) { benchmarkDropoutFill(b, dropoutFillGo) }

func benchmarkDropoutFill(b *testing.B, fill func(base uint64, thr uint32, dst []float32, n, width, stride int)) {
	const blocks, rows, hidden = 4, 256, 200
	mask := make([]float32, blocks*rows*hidden)
	thr := rollout.DropThreshold(0.1)
	b.SetBytes(int64(len(mask) * 4))
	for i := 0; i < b.N; i++ {
		for q := 0; q < rows; q++ {
			fill(uint64(i*rows+q), thr, mask[q*hidden:], blocks*hidden, hidden, rows*hidden)
		}
	}
}
