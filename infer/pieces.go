package infer

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// defaultBatchRows is the roll-out engines' ONNX Runtime call size on the
// CPU: at hopper size a call of 1-2k rows keeps its intermediate tensors in
// the cache and ran 1.2-1.6x more rows per CPU-second than one call over
// 8-40k rows (see docs/benchmarks.md, "Roll-out throughput").
const defaultBatchRows = 1024

// CUDA defaults of the ADM-Roll engines: concurrent calls (Options.Workers)
// and start rows per roll-out step (RollConfig.ChunkRows). In a sweep of
// workers 1/2/4 x chunk rows 8192/32768/131072 on an H200 (2026-11-28,
// docs/benchmarks.md, "The whole check on an H200"), 4 x 32768 ran 1.26-1.48x
// the transitions/s of the former 1 x 8192 for both engines and both styles
// at 100k rows (fewer, larger calls; calls overlapping on the GPU).
const (
	cudaWorkers   = 4
	cudaChunkRows = 32768
)

// defaultChunkRows is RollConfig.ChunkRows's default on the CPU.
const defaultChunkRows = 8192

// minPieceRows is the smallest call the engines split a batch into just to
// keep every worker busy.
const minPieceRows = 256

// split is how a roll-out engine cuts a batch into ONNX Runtime calls:
// pieces of at most rows rows, up to workers of them running at once (each
// call runs on its goroutine's thread with the session's intra-op threads).
type split struct {
	workers, rows int
	// cuda: the calls run on the CUDA provider, where the CPUs are free
	// for the host loops however many workers there are (rowLoop).
	cuda bool
}

// engineSplit derives the engines' split from opts: Workers, else
// cudaWorkers with CUDA, one per CPU (GOMAXPROCS) when Threads is 0 and one
// when Threads is set; BatchRows, else defaultBatchRows on the CPU and the
// whole batch with CUDA.
func engineSplit(opts Options) split {
	s := split{workers: opts.Workers, rows: opts.BatchRows, cuda: opts.CUDA()}
	if s.workers <= 0 {
		switch {
		case opts.CUDA():
			s.workers = cudaWorkers
		case opts.Threads <= 0:
			s.workers = runtime.GOMAXPROCS(0)
		default:
			s.workers = 1
		}
	}
	if s.rows <= 0 {
		s.rows = defaultBatchRows
		if opts.CUDA() {
			s.rows = 1 << 30
		}
	}
	return s
}

// chunkRows is the engines' default RollConfig.ChunkRows.
func (s split) chunkRows() int {
	if s.cuda {
		return cudaChunkRows
	}
	return defaultChunkRows
}

// engineThreads is the intra-op thread count of an engine's session:
// Threads when set, else 1 (the engine parallelises over pieces instead).
func engineThreads(opts Options) int {
	if opts.Threads > 0 {
		return opts.Threads
	}
	return 1
}

// bounds cuts n rows into nearly equal pieces of at most s.rows rows (and
// into at least s.workers pieces of minPieceRows or more when n allows) and
// returns the piece boundaries 0 = b[0] < b[1] < ... < b[len-1] = n.
func (s split) bounds(n int, b []int) []int {
	b = b[:0]
	if n <= 0 {
		return append(b, 0)
	}
	np := (n + s.rows - 1) / s.rows
	if np < s.workers {
		np = min(s.workers, max(1, n/minPieceRows))
	}
	size := (n + np - 1) / np
	for lo := 0; lo < n; lo += size {
		b = append(b, lo)
	}
	return append(b, n)
}

// each calls f(worker, lo, hi) for every piece [b[i], b[i+1]), on up to
// s.workers goroutines (worker in 0..s.workers-1 names the caller's scratch
// space; one worker never runs two pieces at once). It returns the first
// error; after an error the remaining pieces are skipped.
func (s split) each(b []int, f func(worker, lo, hi int) error) error {
	np := len(b) - 1
	if np <= 0 {
		return nil
	}
	if s.workers <= 1 || np == 1 {
		for i := 0; i < np; i++ {
			if err := f(0, b[i], b[i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next   atomic.Int64
		failed atomic.Bool
		mu     sync.Mutex
		first  error
		wg     sync.WaitGroup
	)
	for w := 0; w < min(s.workers, np); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= np || failed.Load() {
					return
				}
				if err := f(w, b[i], b[i+1]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return first
}
