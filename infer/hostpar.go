package infer

import (
	"runtime"
	"sync"
)

// hostRows is the fewest rows one goroutine of a roll-out's host loops
// takes: a row costs well under a microsecond there, so smaller shares
// would cost more in starting goroutines than they save.
const hostRows = 1024

// parRows calls f(lo, hi) for the ranges of a cut of rows 0..n-1 into up
// to GOMAXPROCS ranges of at least hostRows rows, concurrently, and returns
// once every call has returned. The roll-out's host loops use it for the
// work that draws nothing from the rng and writes each row's own slots
// only, so the result is the same however the rows are cut.
func parRows(n int, f func(lo, hi int)) {
	np := min(runtime.GOMAXPROCS(0), n/hostRows)
	if np <= 1 {
		f(0, n)
		return
	}
	size := (n + np - 1) / np
	var wg sync.WaitGroup
	for lo := size; lo < n; lo += size {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			f(lo, min(lo+size, n))
		}(lo)
	}
	f(0, size)
	wg.Wait()
}
