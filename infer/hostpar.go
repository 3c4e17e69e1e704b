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

// serialRows calls f(0, n): the host loops on the calling goroutine.
func serialRows(n int, f func(lo, hi int)) { f(0, n) }

// hostLoops is implemented by the engines that tell the roll-out how to
// run its per-row host loops.
type hostLoops interface {
	rowLoop() func(n int, f func(lo, hi int))
}

// rowLoop is how a roll-out with an engine of split s runs its per-row
// host loops: on several goroutines (parRows) on the CUDA provider and
// wherever the engine runs its ONNX Runtime calls one after another (one
// worker: Options.Threads set), where the other CPUs would idle meanwhile;
// on the calling goroutine when several workers run calls at once on the
// CPU (the CPU split), where the host loops are a small share of the time
// and extra goroutines would only contend with the workers on a loaded
// machine.
func (s split) rowLoop() func(n int, f func(lo, hi int)) {
	if s.workers > 1 && !s.cuda {
		return serialRows
	}
	return parRows
}

// packer returns how an engine runs the host work of a piece [lo, hi) of
// plans (packing inputs, storing outputs), f(lo2, hi2) over sub-ranges:
// on the piece's goroutine when several workers run pieces at once, and
// cut by parRows when one worker runs them one after another (the CUDA
// split), so that the rest of the CPUs help. f must write each plan's own
// slots only.
func (s split) packer() func(lo, hi int, f func(lo2, hi2 int)) {
	if s.workers > 1 {
		return func(lo, hi int, f func(lo2, hi2 int)) { f(lo, hi) }
	}
	return func(lo, hi int, f func(lo2, hi2 int)) {
		parRows(hi-lo, func(a, b int) { f(lo+a, lo+b) })
	}
}
