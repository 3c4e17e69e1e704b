//go:build admpo_cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdint.h>

enum { admpoMaxParams = 32 };

// admpoLaunch launches f over grid blocks of block threads on stream s with
// n parameters, each in a 64-bit slot of vals. The driver copies the values
// at launch, so vals need to live only for the call.
static CUresult admpoLaunch(CUfunction f, unsigned grid, unsigned block, CUstream s, uint64_t *vals, int n) {
	void *args[admpoMaxParams];
	if (n > admpoMaxParams) return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < n; i++) args[i] = &vals[i];
	return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// maxParams is the most kernel parameters launch passes.
const maxParams = C.admpoMaxParams

// launch queues fn on stream with the parameter slots vals.
//
// It stands in for cu.Function.Launch, which stores the parameters' addresses
// as unsafe.Pointer values in uninitialised C memory: with the garbage
// collector's write barrier on, the barrier reads the old (garbage) word as a
// pointer, and a run dies with "found bad pointer in Go heap" (seen on an H200
// in a hopper ADMPO-ON run, 2026-11-27). Here the slots are a Go []uint64
// (no pointers inside, so cgo may pass it) and the address array is built in C.
func launch(fn cu.Function, grid, block int, stream cu.Stream, vals []uint64) error {
	if len(vals) == 0 || len(vals) > maxParams {
		return fmt.Errorf("cuda: %d kernel parameters (want 1..%d)", len(vals), maxParams)
	}
	// cu.Function and cu.Stream each hold one driver handle, nothing else.
	f := *(*C.CUfunction)(unsafe.Pointer(&fn))
	s := *(*C.CUstream)(unsafe.Pointer(&stream))
	if r := C.admpoLaunch(f, C.uint(grid), C.uint(block), s, (*C.uint64_t)(unsafe.Pointer(&vals[0])), C.int(len(vals))); r != C.CUDA_SUCCESS {
		return cuErr("cuLaunchKernel", C.CUresult(r))
	}
	return nil
}

// The handles' layouts launch relies on.
var _ = [1]struct{}{}[unsafe.Sizeof(cu.Function{})-unsafe.Sizeof(C.CUfunction(nil))]
var _ = [1]struct{}{}[unsafe.Sizeof(cu.Stream{})-unsafe.Sizeof(C.CUstream(nil))]
