package device

import (
	"errors"
	"fmt"
)

// Type is the element type of a Buffer.
type Type uint8

// The element types a Buffer may hold.
const (
	Float32 Type = iota + 1
	Int32
)

func (t Type) String() string {
	switch t {
	case Float32:
		return "float32"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Buffer is an allocation of Len elements of one Type on a device. Buffers
// belong to the Device that allocated them.
type Buffer interface {
	Len() int
	Type() Type
}

// Device runs kernels and matrix products on buffers it owns. A Device is not
// safe for concurrent use.
type Device interface {
	// Name describes the device, e.g. "emu" or "cuda: NVIDIA H200".
	Name() string
	// Alloc returns a buffer of n elements of type t, zeroed.
	Alloc(t Type, n int) (Buffer, error)
	// Free releases b; using b afterwards is an error.
	Free(b Buffer) error
	// Upload copies src into the first len(src) elements of the float32
	// buffer dst.
	Upload(dst Buffer, src []float32) error
	// UploadInt32 copies src into the first len(src) elements of the int32
	// buffer dst.
	UploadInt32(dst Buffer, src []int32) error
	// Download waits for queued work and copies the first len(dst)
	// elements of the float32 buffer src into dst.
	Download(dst []float32, src Buffer) error
	// DownloadInt32 is Download for int32 buffers.
	DownloadInt32(dst []int32, src Buffer) error
	// Launch queues the kernel name over n elements with args (see the
	// package documentation and Kernels).
	Launch(name string, n int, args ...any) error
	// Gemm queues C = alpha·op(A)·op(B) + beta·C on column-major float32
	// matrices, as cublasSgemm: op(A) is m×k, op(B) k×n, C m×n; op(X) is
	// X transposed when the trans flag is set.
	Gemm(transA, transB bool, m, n, k int, alpha float32, a Buffer, lda int,
		b Buffer, ldb int, beta float32, c Buffer, ldc int) error
	// GemmStridedBatched queues batch products C_i = alpha·op(A_i)·op(B_i)
	// + beta·C_i, as cublasSgemmStridedBatched: A_i starts strideA
	// elements after A_{i-1} in a, and likewise B_i and C_i; each is a
	// column-major matrix as Gemm's. A stride of 0 uses one A (or B) for
	// every product; the C_i must not overlap (CheckGemmStridedBatched).
	GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a Buffer, lda, strideA int,
		b Buffer, ldb, strideB int, beta float32, c Buffer, ldc, strideC int, batch int) error
	// Sync waits until all queued work is done and reports a failure of it.
	Sync() error
	// Close frees every buffer and releases the device.
	Close() error
}

// Graph is work a Capturer recorded: the same launches and products, with
// the same scalar arguments and buffers, queued again by each Launch.
type Graph interface {
	// Launch queues the recorded work; it reads the buffers' contents as
	// they are when the work runs.
	Launch() error
	// Free releases the graph; launching it afterwards is an error.
	Free() error
}

// Capturer is a Device that can record work instead of running it: between
// BeginCapture and EndCapture, Launch, Gemm and GemmStridedBatched are
// recorded (and checked as always) but not run, and every other method but
// Name fails with ErrCapturing. On cuda a Graph is a CUDA graph: one launch
// queues all of its kernels and products.
type Capturer interface {
	Device
	BeginCapture() error
	EndCapture() (Graph, error)
}

// Errors that Device methods wrap.
var (
	ErrFreed        = errors.New("buffer was freed")
	ErrForeign      = errors.New("buffer belongs to another device")
	ErrClosed       = errors.New("device is closed")
	ErrUnknown      = errors.New("unknown kernel")
	ErrArgs         = errors.New("bad kernel arguments")
	ErrRange        = errors.New("out of range")
	ErrType         = errors.New("wrong element type")
	ErrInvalidShape = errors.New("invalid matrix shape")
	ErrCapturing    = errors.New("not allowed while capturing")
)

// MaxLen is the most elements a buffer or a launch may have: kernels index
// with 32-bit ints and step by the whole grid.
const MaxLen = 1<<31 - 1<<24

// CheckAlloc reports whether t and n are a valid allocation.
func CheckAlloc(t Type, n int) error {
	if t != Float32 && t != Int32 {
		return fmt.Errorf("device: alloc: %w %v", ErrType, t)
	}
	if n < 0 || n > MaxLen {
		return fmt.Errorf("device: alloc of %d elements: %w (0..%d)", n, ErrRange, MaxLen)
	}
	return nil
}

// CheckCopy reports whether count elements of type t fit buffer b of the
// copy named op.
func CheckCopy(op string, b Buffer, t Type, count int) error {
	if b.Type() != t {
		return fmt.Errorf("device: %s: %w: buffer holds %v, want %v", op, ErrType, b.Type(), t)
	}
	if count > b.Len() {
		return fmt.Errorf("device: %s: %d elements into a buffer of %d: %w", op, count, b.Len(), ErrRange)
	}
	return nil
}

// CheckGemm reports whether the arguments of Device.Gemm describe valid
// column-major matrices that fit their buffers.
func CheckGemm(transA, transB bool, m, n, k int, a Buffer, lda int, b Buffer, ldb int, c Buffer, ldc int) error {
	return checkGemm("gemm", transA, transB, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, 1)
}

// CheckGemmStridedBatched reports whether the arguments of
// Device.GemmStridedBatched describe batch valid column-major matrices
// each of A, B and C whose last one (at stride·(batch-1)) still fits its
// buffer, with strides in 0..MaxLen and C's matrices apart: C_i's extent
// ldc·(n-1)+m is at most strideC when batch > 1. A batch of 0 is valid
// and does nothing.
func CheckGemmStridedBatched(transA, transB bool, m, n, k int, a Buffer, lda, strideA int, b Buffer, ldb, strideB int,
	c Buffer, ldc, strideC int, batch int) error {
	return checkGemm("gemm batched", transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c, ldc, strideC, batch)
}

func checkGemm(op string, transA, transB bool, m, n, k int, a Buffer, lda, strideA int, b Buffer, ldb, strideB int,
	c Buffer, ldc, strideC int, batch int) error {
	if m < 0 || n < 0 || k < 0 || m > MaxLen || n > MaxLen || k > MaxLen {
		return fmt.Errorf("device: %s m=%d n=%d k=%d: %w", op, m, n, k, ErrInvalidShape)
	}
	if batch < 0 || batch > MaxLen {
		return fmt.Errorf("device: %s of %d products: %w", op, batch, ErrInvalidShape)
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	for _, x := range []struct {
		name       string
		buf        Buffer
		ld, stride int
		rows, cols int
	}{{"A", a, lda, strideA, ar, ac}, {"B", b, ldb, strideB, br, bc}, {"C", c, ldc, strideC, m, n}} {
		if x.buf.Type() != Float32 {
			return fmt.Errorf("device: %s: %s: %w: %v", op, x.name, ErrType, x.buf.Type())
		}
		if x.ld < max(1, x.rows) || x.ld > MaxLen {
			return fmt.Errorf("device: %s: ld%s=%d for %d rows (at most %d): %w", op, x.name, x.ld, x.rows, MaxLen,
				ErrInvalidShape)
		}
		if x.stride < 0 || x.stride > MaxLen {
			return fmt.Errorf("device: %s: stride%s=%d: %w (0..%d)", op, x.name, x.stride, ErrInvalidShape, MaxLen)
		}
		if x.rows == 0 || x.cols == 0 || batch == 0 {
			continue
		}
		// Both terms are below 2^62: no overflow.
		extent := x.ld*(x.cols-1) + x.rows
		if need := x.stride*(batch-1) + extent; need > x.buf.Len() {
			if batch == 1 {
				return fmt.Errorf("device: %s: %s is %dx%d with ld %d, needs %d elements, buffer has %d: %w",
					op, x.name, x.rows, x.cols, x.ld, need, x.buf.Len(), ErrRange)
			}
			return fmt.Errorf("device: %s: %d %s of %dx%d with ld %d and stride %d need %d elements, buffer has %d: %w",
				op, batch, x.name, x.rows, x.cols, x.ld, x.stride, need, x.buf.Len(), ErrRange)
		}
		if x.name == "C" && batch > 1 && x.stride < extent {
			return fmt.Errorf("device: %s: C's %dx%d matrices with ld %d span %d elements, more than strideC=%d: %w",
				op, x.rows, x.cols, x.ld, extent, x.stride, ErrArgs)
		}
	}
	if c == a || c == b {
		return fmt.Errorf("device: %s: C aliases an input: %w", op, ErrArgs)
	}
	return nil
}
