package emu

import "C"

import (
	"fmt"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/kernels"
	"github.com/admpo/admpo/internal/cpukern"
)

// sourceHash ties this package's build to the kernel sources: the cgo
// include above is outside this directory, which Go's build cache does not
// watch, but a change in the embedded sources changes package kernels and
// so rebuilds this one.
var sourceHash = kernels.SourceHash()

// Device is the host emulation of a GPU. The zero value is not usable; call
// New.
type Device struct {
	live   map[*buffer]struct{}
	closed bool
	rec    *graph // the graph being captured, or nil
}

type buffer struct {
	t     device.Type
	n     int
	f     []float32
	i     []int32
	owner *Device
}

func (b *buffer) Len() int          { return b.n }
func (b *buffer) Type() device.Type { return b.t }
func (b *buffer) freed() bool       { return b.f == nil && b.i == nil }
func (b *buffer) fptr() *C.float {
	if len(b.f) == 0 {
		return nil
	}
	return (*C.float)(&b.f[0])
}
func (b *buffer) iptr() *C.int {
	if len(b.i) == 0 {
		return nil
	}
	return (*C.int)(&b.i[0])
}

// New returns an emulated device.
func New() *Device { return &Device{live: map[*buffer]struct{}{}} }

// Name returns "emu".
func (d *Device) Name() string { return "emu" }

// Alloc returns a zeroed buffer of n elements of type t.
func (d *Device) Alloc(t device.Type, n int) (device.Buffer, error) {
	if err := d.capturing("alloc"); err != nil {
		return nil, err
	}
	if d.closed {
		return nil, fmt.Errorf("emu: alloc: %w", device.ErrClosed)
	}
	if err := device.CheckAlloc(t, n); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	// One spare element keeps the slice non-nil for n = 0, so a freed
	// buffer (nil slices) is told apart from an empty one.
	b := &buffer{t: t, n: n, owner: d}
	if t == device.Float32 {
		b.f = make([]float32, n, n+1)
	} else {
		b.i = make([]int32, n, n+1)
	}
	d.live[b] = struct{}{}
	return b, nil
}

// own returns b as this device's live buffer.
func (d *Device) own(op string, b device.Buffer) (*buffer, error) {
	if d.closed {
		return nil, fmt.Errorf("emu: %s: %w", op, device.ErrClosed)
	}
	eb, ok := b.(*buffer)
	if !ok || eb == nil || eb.owner != d {
		return nil, fmt.Errorf("emu: %s: %w (%T)", op, device.ErrForeign, b)
	}
	if eb.freed() {
		return nil, fmt.Errorf("emu: %s: %w", op, device.ErrFreed)
	}
	return eb, nil
}

// Free releases b.
func (d *Device) Free(b device.Buffer) error {
	if err := d.capturing("free"); err != nil {
		return err
	}
	eb, err := d.own("free", b)
	if err != nil {
		return err
	}
	eb.f, eb.i = nil, nil
	delete(d.live, eb)
	return nil
}

// Upload copies src into the start of dst.
func (d *Device) Upload(dst device.Buffer, src []float32) error {
	if err := d.capturing("upload"); err != nil {
		return err
	}
	b, err := d.own("upload", dst)
	if err != nil {
		return err
	}
	if err := device.CheckCopy("upload", b, device.Float32, len(src)); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	copy(b.f, src)
	return nil
}

// UploadInt32 copies src into the start of dst.
func (d *Device) UploadInt32(dst device.Buffer, src []int32) error {
	if err := d.capturing("upload"); err != nil {
		return err
	}
	b, err := d.own("upload", dst)
	if err != nil {
		return err
	}
	if err := device.CheckCopy("upload", b, device.Int32, len(src)); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	copy(b.i, src)
	return nil
}

// Download copies the start of src into dst.
func (d *Device) Download(dst []float32, src device.Buffer) error {
	if err := d.capturing("download"); err != nil {
		return err
	}
	b, err := d.own("download", src)
	if err != nil {
		return err
	}
	if err := device.CheckCopy("download", b, device.Float32, len(dst)); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	copy(dst, b.f)
	return nil
}

// DownloadInt32 copies the start of src into dst.
func (d *Device) DownloadInt32(dst []int32, src device.Buffer) error {
	if err := d.capturing("download"); err != nil {
		return err
	}
	b, err := d.own("download", src)
	if err != nil {
		return err
	}
	if err := device.CheckCopy("download", b, device.Int32, len(dst)); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	copy(dst, b.i)
	return nil
}

// Launch runs kernel name over n elements now.
func (d *Device) Launch(name string, n int, args ...any) error {
	a, err := device.CheckLaunchOn("emu", d.own, name, n, args...)
	if err != nil {
		return err
	}
	run, ok := table[name]
	if !ok {
		return fmt.Errorf("emu: launch %q: %w (no emulation)", name, device.ErrUnknown)
	}
	if d.rec != nil {
		d.rec.ops = append(d.rec.ops, func() error { return d.Launch(name, n, args...) })
		return nil
	}
	if n > 0 {
		run(C.int(n), a)
	}
	return nil
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C (column-major) now.
func (d *Device) Gemm(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda int,
	b device.Buffer, ldb int, beta float32, c device.Buffer, ldc int) error {
	bufs, err := device.CheckGemmOn("emu", d.own, transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if d.rec != nil {
		d.rec.ops = append(d.rec.ops, func() error {
			return d.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		})
		return nil
	}
	// Column-major C = op(A)·op(B) is row-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the
	// host training engine's kernels (cpukern) with the operands swapped, so
	// emu's products round as the CPU path's do. A and B may be empty when
	// k = 0; then C is only scaled.
	cpukern.Sgemm(transB, transA, n, m, k, alpha, bufs[1].f, ldb, bufs[0].f, lda, beta, bufs[2].f, ldc)
	return nil
}

// GemmStridedBatched computes batch products C_i = alpha·op(A_i)·op(B_i) +
// beta·C_i (column-major, A_i at strideA·i in a and likewise B_i, C_i) now,
// one after another with Gemm's kernel.
func (d *Device) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda, strideA int,
	b device.Buffer, ldb, strideB int, beta float32, c device.Buffer, ldc, strideC int, batch int) error {
	bufs, err := device.CheckGemmStridedBatchedOn("emu", d.own, transA, transB, m, n, k, a, lda, strideA, b, ldb,
		strideB, c, ldc, strideC, batch)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	if d.rec != nil {
		d.rec.ops = append(d.rec.ops, func() error {
			return d.GemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc,
				strideC, batch)
		})
		return nil
	}
	// at is the i-th matrix of x: empty past the end, which only an empty
	// operand (k = 0) reaches.
	at := func(x []float32, stride, i int) []float32 { return x[min(stride*i, len(x)):] }
	for i := range batch {
		cpukern.Sgemm(transB, transA, n, m, k, alpha, at(bufs[1].f, strideB, i), ldb, at(bufs[0].f, strideA, i), lda,
			beta, at(bufs[2].f, strideC, i), ldc)
	}
	return nil
}

// Sync returns nil: emulated work runs when it is queued.
func (d *Device) Sync() error {
	if err := d.capturing("sync"); err != nil {
		return err
	}
	if d.closed {
		return fmt.Errorf("emu: sync: %w", device.ErrClosed)
	}
	return nil
}

// Close frees every buffer. Closing twice is an error.
func (d *Device) Close() error {
	if d.closed {
		return fmt.Errorf("emu: close: %w", device.ErrClosed)
	}
	for b := range d.live {
		b.f, b.i = nil, nil
	}
	d.live = nil
	d.closed = true
	d.rec = nil
	return nil
}

var _ device.Capturer = (*Device)(nil)
