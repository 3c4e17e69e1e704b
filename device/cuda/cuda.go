//go:build admpo_cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/cuda/cublas"
	"github.com/admpo/admpo/device/kernels"
)

// Config chooses the GPU and cuBLAS's arithmetic.
type Config struct {
	// Ordinal is the CUDA device number (0 for the first GPU).
	Ordinal int
	// Pedantic makes cuBLAS compute in full float32 with its reference
	// algorithms (CUBLAS_PEDANTIC_MATH), for tests. Otherwise cuBLAS uses
	// CUBLAS_DEFAULT_MATH, which for float32 products is also float32, not
	// TF32.
	Pedantic bool
}

// blockSize is the threads per block of every launch; grids are capped at
// blocksPerSM blocks per multiprocessor and stride over larger n.
const (
	blockSize   = 256
	blocksPerSM = 16
)

// Device is a GPU in its primary context. It is not safe for concurrent use.
type Device struct {
	dev      cu.Device
	ctx      cu.CUContext
	stream   cu.Stream
	mod      cu.Module
	fns      map[string]cu.Function
	blas     cublas.Handle
	name     string
	maxGrid  int
	live     map[*buffer]struct{}
	closed   bool
	blasPath string
	blasVer  int
	loaded   bool // mod holds the kernels' module
	capture  bool // the stream is capturing (capture.go)
	graphs   map[*graph]struct{}
}

type buffer struct {
	t     device.Type
	n     int
	ptr   cu.DevicePtr
	owner *Device
}

func (b *buffer) Len() int          { return b.n }
func (b *buffer) Type() device.Type { return b.t }

// Open retains the primary context of GPU cfg.Ordinal, makes a stream, loads
// the kernels' PTX and opens cuBLAS.
func Open(cfg Config) (d *Device, err error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if cfg.Ordinal < 0 || cfg.Ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d of %d: %w", cfg.Ordinal, n, device.ErrRange)
	}
	d = &Device{dev: cu.Device(cfg.Ordinal), fns: map[string]cu.Function{}, live: map[*buffer]struct{}{}}
	name, err := d.dev.Name()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d name: %w", cfg.Ordinal, err)
	}
	sms, err := d.dev.Attribute(cu.MultiprocessorCount)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: multiprocessor count: %w", name, err)
	}
	d.maxGrid = max(1, sms) * blocksPerSM
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: %s: retaining the primary context: %w", name, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if err != nil {
			_ = d.release()
		}
	}()
	if err = cu.SetCurrentContext(d.ctx); err != nil {
		return nil, fmt.Errorf("cuda: %s: making the primary context current: %w", name, err)
	}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("cuda: %s: making a stream: %w", name, err)
	}
	if d.mod, err = cu.LoadData(kernels.PTX); err != nil {
		return nil, fmt.Errorf("cuda: %s: loading the kernels' PTX: %w", name, err)
	}
	d.loaded = true
	for _, k := range device.Kernels() {
		fn, err := d.mod.Function(k.Name)
		if err != nil {
			return nil, fmt.Errorf("cuda: %s: kernel %s not in the PTX: %w", name, k.Name, err)
		}
		d.fns[k.Name] = fn
	}
	if d.blas, d.blasVer, err = cublas.New(uintptr(unsafe.Pointer(d.stream.C())), cfg.Pedantic); err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", name, err)
	}
	d.blasPath, _ = cublas.Load()
	d.name = fmt.Sprintf("cuda: %s (cuBLAS %d from %s)", name, d.blasVer, d.blasPath)
	return d, nil
}

// release frees what Open made, in reverse.
func (d *Device) release() error {
	var errs []error
	if d.blas != 0 {
		errs = append(errs, d.blas.Destroy())
		d.blas = 0
	}
	if d.loaded {
		errs = append(errs, d.mod.Unload())
		d.loaded, d.fns = false, nil
	}
	if d.stream != (cu.Stream{}) {
		errs = append(errs, d.stream.Destroy())
	}
	errs = append(errs, d.dev.ReleasePrimaryCtx())
	return errors.Join(errs...)
}

// enter pins the calling goroutine to its thread and makes the primary
// context current there; call the returned function when done.
func (d *Device) enter(op string) (func(), error) {
	if d.closed {
		return nil, fmt.Errorf("cuda: %s: %w", op, device.ErrClosed)
	}
	if d.capture && !capturable(op) {
		return nil, fmt.Errorf("cuda: %s: %w", op, device.ErrCapturing)
	}
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("cuda: %s: making the context current: %w", op, err)
	}
	return runtime.UnlockOSThread, nil
}

// Name describes the GPU and the cuBLAS in use.
func (d *Device) Name() string { return d.name }

// Alloc returns a zeroed buffer of n elements of type t.
func (d *Device) Alloc(t device.Type, n int) (device.Buffer, error) {
	if err := device.CheckAlloc(t, n); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	leave, err := d.enter("alloc")
	if err != nil {
		return nil, err
	}
	defer leave()
	ptr, err := cu.MemAlloc(int64(max(n, 1)) * 4)
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc of %d %v: %w", n, t, err)
	}
	if err := cu.MemsetD32Async(ptr, 0, int64(max(n, 1)), d.stream); err != nil {
		_ = cu.MemFree(ptr)
		return nil, fmt.Errorf("cuda: zeroing %d %v: %w", n, t, err)
	}
	b := &buffer{t: t, n: n, ptr: ptr, owner: d}
	d.live[b] = struct{}{}
	return b, nil
}

func (d *Device) own(op string, b device.Buffer) (*buffer, error) {
	if d.closed {
		return nil, fmt.Errorf("cuda: %s: %w", op, device.ErrClosed)
	}
	cb, ok := b.(*buffer)
	if !ok || cb == nil || cb.owner != d {
		return nil, fmt.Errorf("cuda: %s: %w (%T)", op, device.ErrForeign, b)
	}
	if cb.ptr == 0 {
		return nil, fmt.Errorf("cuda: %s: %w", op, device.ErrFreed)
	}
	return cb, nil
}

// Free waits for queued work and releases b.
func (d *Device) Free(b device.Buffer) error {
	cb, err := d.own("free", b)
	if err != nil {
		return err
	}
	leave, err := d.enter("free")
	if err != nil {
		return err
	}
	defer leave()
	// Queued kernels may still use the memory.
	serr := d.stream.Synchronize()
	ferr := cu.MemFree(cb.ptr)
	cb.ptr = 0
	delete(d.live, cb)
	if serr != nil || ferr != nil {
		return fmt.Errorf("cuda: free: %w", errors.Join(serr, ferr))
	}
	return nil
}

func (d *Device) upload(op string, dst device.Buffer, t device.Type, src unsafe.Pointer, count int) error {
	b, err := d.own(op, dst)
	if err != nil {
		return err
	}
	if err := device.CheckCopy(op, b, t, count); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if count == 0 {
		return nil
	}
	leave, err := d.enter(op)
	if err != nil {
		return err
	}
	defer leave()
	// From pageable memory the driver stages src before returning, so the
	// caller may reuse it at once; the copy is ordered on the stream.
	if err := cu.MemcpyHtoDAsync(b.ptr, src, int64(count)*4, d.stream); err != nil {
		return fmt.Errorf("cuda: %s of %d elements: %w", op, count, err)
	}
	return nil
}

func (d *Device) download(op string, src device.Buffer, t device.Type, dst unsafe.Pointer, count int) error {
	b, err := d.own(op, src)
	if err != nil {
		return err
	}
	if err := device.CheckCopy(op, b, t, count); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	leave, err := d.enter(op)
	if err != nil {
		return err
	}
	defer leave()
	if count > 0 {
		if err := cu.MemcpyDtoHAsync(dst, b.ptr, int64(count)*4, d.stream); err != nil {
			return fmt.Errorf("cuda: %s of %d elements: %w", op, count, err)
		}
	}
	if err := d.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: %s: %w", op, err)
	}
	return nil
}

// Upload copies src into the start of dst.
func (d *Device) Upload(dst device.Buffer, src []float32) error {
	return d.upload("upload", dst, device.Float32, unsafe.Pointer(unsafe.SliceData(src)), len(src))
}

// UploadInt32 copies src into the start of dst.
func (d *Device) UploadInt32(dst device.Buffer, src []int32) error {
	return d.upload("upload", dst, device.Int32, unsafe.Pointer(unsafe.SliceData(src)), len(src))
}

// Download waits for queued work and copies the start of src into dst.
func (d *Device) Download(dst []float32, src device.Buffer) error {
	return d.download("download", src, device.Float32, unsafe.Pointer(unsafe.SliceData(dst)), len(dst))
}

// DownloadInt32 waits for queued work and copies the start of src into dst.
func (d *Device) DownloadInt32(dst []int32, src device.Buffer) error {
	return d.download("download", src, device.Int32, unsafe.Pointer(unsafe.SliceData(dst)), len(dst))
}

// Launch queues kernel name over n elements on the stream.
func (d *Device) Launch(name string, n int, args ...any) error {
	a, err := device.CheckLaunchOn("cuda", d.own, name, n, args...)
	if err != nil {
		return err
	}
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: launch %q: %w (not loaded)", name, device.ErrUnknown)
	}
	if n == 0 {
		return nil
	}
	// Every parameter sits in a 64-bit slot (launch passes 8 bytes each); the
	// driver reads as many bytes as the kernel's parameter has, and 32-bit
	// values are the slot's low half on this little-endian machine.
	vals := make([]uint64, len(a)+1)
	vals[0] = uint64(uint32(int32(n)))
	for i, v := range a {
		switch x := v.(type) {
		case *buffer:
			vals[i+1] = uint64(x.ptr)
		case int32:
			vals[i+1] = uint64(uint32(x))
		case float32:
			vals[i+1] = uint64(math.Float32bits(x))
		default:
			return fmt.Errorf("cuda: launch %s: argument %d is %T: %w", name, i, v, device.ErrArgs)
		}
	}
	grid := min((n+blockSize-1)/blockSize, d.maxGrid)
	leave, err := d.enter("launch " + name)
	if err != nil {
		return err
	}
	defer leave()
	if err := launch(fn, grid, blockSize, d.stream, vals); err != nil {
		return fmt.Errorf("cuda: launch %s over %d: %w", name, n, err)
	}
	return nil
}

// Gemm queues C = alpha·op(A)·op(B) + beta·C (column-major) on the stream
// through cublasSgemm.
func (d *Device) Gemm(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda int,
	b device.Buffer, ldb int, beta float32, c device.Buffer, ldc int) error {
	bufs, err := device.CheckGemmOn("cuda", d.own, transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	leave, err := d.enter("gemm")
	if err != nil {
		return err
	}
	defer leave()
	return d.blas.Sgemm(transA, transB, m, n, k, alpha, uintptr(bufs[0].ptr), lda, uintptr(bufs[1].ptr), ldb,
		beta, uintptr(bufs[2].ptr), ldc)
}

// GemmStridedBatched queues batch products C_i = alpha·op(A_i)·op(B_i) +
// beta·C_i (column-major, A_i at strideA·i in a and likewise B_i, C_i) on
// the stream through one cublasSgemmStridedBatched.
func (d *Device) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda, strideA int,
	b device.Buffer, ldb, strideB int, beta float32, c device.Buffer, ldc, strideC int, batch int) error {
	bufs, err := device.CheckGemmStridedBatchedOn("cuda", d.own, transA, transB, m, n, k, a, lda, strideA, b, ldb,
		strideB, c, ldc, strideC, batch)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	leave, err := d.enter("gemm batched")
	if err != nil {
		return err
	}
	defer leave()
	return d.blas.SgemmStridedBatched(transA, transB, m, n, k, alpha, uintptr(bufs[0].ptr), lda, strideA,
		uintptr(bufs[1].ptr), ldb, strideB, beta, uintptr(bufs[2].ptr), ldc, strideC, batch)
}

// Sync waits for the stream and reports a failure of its work.
func (d *Device) Sync() error {
	leave, err := d.enter("sync")
	if err != nil {
		return err
	}
	defer leave()
	if err := d.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	return nil
}

// Close waits for queued work, frees every buffer and releases the
// context. Closing twice is an error.
func (d *Device) Close() error {
	leave, err := d.enter("close")
	if err != nil {
		return err
	}
	defer leave()
	errs := []error{d.abandonCapture(), d.stream.Synchronize()}
	for g := range d.graphs {
		errs = append(errs, g.destroy())
	}
	d.graphs = nil
	for b := range d.live {
		errs = append(errs, cu.MemFree(b.ptr))
		b.ptr = 0
	}
	d.live = nil
	errs = append(errs, d.release())
	d.closed = true
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: close: %w", err)
	}
	return nil
}

var _ device.Capturer = (*Device)(nil)
