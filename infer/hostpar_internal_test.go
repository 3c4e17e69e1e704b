package infer

import (
	"runtime"
	"sync"
	"testing"
)

// TestRowLoop: the one-worker split and any split on CUDA spread a
// roll-out's host loops over GOMAXPROCS goroutines in ranges of at least
// hostRows rows that cover every row once; the split with several workers
// on the CPU and a batch under two ranges' rows make one call.
func TestRowLoop(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	for _, c := range []struct {
		s        split
		n, calls int
	}{
		{split{workers: 1}, 10 * hostRows, 4},
		{split{workers: 1}, 3 * hostRows, 3},
		{split{workers: 1}, 2*hostRows - 1, 1},
		{split{workers: 1}, 0, 1},
		{split{workers: 2}, 10 * hostRows, 1},
		{split{workers: 2, cuda: true}, 10 * hostRows, 4},
	} {
		var mu sync.Mutex
		calls := 0
		seen := make([]int, c.n)
		c.s.rowLoop()(c.n, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls > 1 && hi-lo < hostRows {
				t.Errorf("workers %d, %d rows: range [%d, %d) under %d rows", c.s.workers, c.n, lo, hi, hostRows)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		if calls != c.calls {
			t.Errorf("workers %d, %d rows: %d calls, want %d", c.s.workers, c.n, calls, c.calls)
		}
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("workers %d, %d rows: row %d covered %d times", c.s.workers, c.n, i, k)
			}
		}
	}
}
