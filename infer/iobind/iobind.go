package iobind

// #cgo CFLAGS: -I${SRCDIR}/../../third_party/onnxruntime
// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
// #include <string.h>
// #include "onnxruntime_c_api.h"
//
// typedef const OrtApiBase *(*admpo_ib_get_api_base_fn)(void);
//
// // admpo_ib_api returns the OrtApi of the ONNX Runtime already loaded from
// // lib (RTLD_NOLOAD: it never loads a second copy), or NULL.
// static const OrtApi *admpo_ib_api(const char *lib) {
// 	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
// 	if (h == NULL) return NULL;
// 	admpo_ib_get_api_base_fn get = (admpo_ib_get_api_base_fn)dlsym(h, "OrtGetApiBase");
// 	const OrtApi *api = get ? get()->GetApi(ORT_API_VERSION) : NULL;
// 	dlclose(h); // onnxruntime_go's handle keeps the library loaded
// 	return api;
// }
//
// // admpo_ib_msg turns a status into a malloc'd message (NULL for success)
// // and releases it.
// static char *admpo_ib_msg(const OrtApi *api, OrtStatus *s) {
// 	if (s == NULL) return NULL;
// 	char *m = strdup(api->GetErrorMessage(s));
// 	api->ReleaseStatus(s);
// 	return m;
// }
//
// static char *admpo_ib_input_count(const OrtApi *api, const OrtSession *s, size_t *n) {
// 	return admpo_ib_msg(api, api->SessionGetInputCount(s, n));
// }
// static char *admpo_ib_output_count(const OrtApi *api, const OrtSession *s, size_t *n) {
// 	return admpo_ib_msg(api, api->SessionGetOutputCount(s, n));
// }
// static char *admpo_ib_mem_cpu(const OrtApi *api, OrtMemoryInfo **out) {
// 	return admpo_ib_msg(api, api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, out));
// }
// static char *admpo_ib_mem(const OrtApi *api, const char *name, int id, OrtMemoryInfo **out) {
// 	return admpo_ib_msg(api, api->CreateMemoryInfo(name, OrtDeviceAllocator, id, OrtMemTypeDefault, out));
// }
// // admpo_ib_input_mem finds the device memory of the execution provider
// // device that input idx of s was assigned to (SessionGetEpDeviceForInputs,
// // EpDevice_MemoryInfo); *out is NULL when the input has no OrtEpDevice or
// // its provider uses CPU memory. *gpu is 1 for GPU memory, *id its device.
// static char *admpo_ib_input_mem(const OrtApi *api, const OrtSession *s, size_t idx,
// 		const OrtMemoryInfo **out, int *gpu, int *id) {
// 	size_t n = 0;
// 	*out = NULL;
// 	char *m = admpo_ib_msg(api, api->SessionGetInputCount(s, &n));
// 	if (m) return m;
// 	if (idx >= n) return strdup("no such input");
// 	const OrtEpDevice **devs = calloc(n, sizeof *devs);
// 	if (devs == NULL) return strdup("out of memory");
// 	m = admpo_ib_msg(api, api->SessionGetEpDeviceForInputs(s, devs, n));
// 	if (m == NULL && devs[idx] != NULL) {
// 		*out = api->EpDevice_MemoryInfo(devs[idx], OrtDeviceMemoryType_DEFAULT);
// 	}
// 	if (m == NULL && *out != NULL) {
// 		OrtMemoryInfoDeviceType t;
// 		api->MemoryInfoGetDeviceType(*out, &t);
// 		*gpu = t == OrtMemoryInfoDeviceType_GPU;
// 		m = admpo_ib_msg(api, api->MemoryInfoGetId(*out, id));
// 	}
// 	free(devs);
// 	return m;
// }
// static void admpo_ib_release_mem(const OrtApi *api, OrtMemoryInfo *m) { api->ReleaseMemoryInfo(m); }
// static char *admpo_ib_allocator(const OrtApi *api, const OrtSession *s, const OrtMemoryInfo *m, OrtAllocator **out) {
// 	return admpo_ib_msg(api, api->CreateAllocator(s, m, out));
// }
// static void admpo_ib_release_allocator(const OrtApi *api, OrtAllocator *a) { api->ReleaseAllocator(a); }
// static char *admpo_ib_alloc(const OrtApi *api, OrtAllocator *a, size_t n, void **out) {
// 	return admpo_ib_msg(api, api->AllocatorAlloc(a, n, out));
// }
// static char *admpo_ib_free(const OrtApi *api, OrtAllocator *a, void *p) {
// 	return admpo_ib_msg(api, api->AllocatorFree(a, p));
// }
// static char *admpo_ib_value(const OrtApi *api, const OrtMemoryInfo *m, void *p, size_t bytes,
// 		const int64_t *shape, size_t rank, int type, OrtValue **out) {
// 	return admpo_ib_msg(api, api->CreateTensorWithDataAsOrtValue(m, p, bytes, shape, rank,
// 		(ONNXTensorElementDataType)type, out));
// }
// static void admpo_ib_release_value(const OrtApi *api, OrtValue *v) { api->ReleaseValue(v); }
// static char *admpo_ib_binding(const OrtApi *api, OrtSession *s, OrtIoBinding **out) {
// 	return admpo_ib_msg(api, api->CreateIoBinding(s, out));
// }
// static void admpo_ib_release_binding(const OrtApi *api, OrtIoBinding *b) { api->ReleaseIoBinding(b); }
// static char *admpo_ib_bind_input(const OrtApi *api, OrtIoBinding *b, const char *name, const OrtValue *v) {
// 	return admpo_ib_msg(api, api->BindInput(b, name, v));
// }
// static char *admpo_ib_bind_output(const OrtApi *api, OrtIoBinding *b, const char *name, const OrtValue *v) {
// 	return admpo_ib_msg(api, api->BindOutput(b, name, v));
// }
// static void admpo_ib_clear(const OrtApi *api, OrtIoBinding *b) {
// 	api->ClearBoundInputs(b);
// 	api->ClearBoundOutputs(b);
// }
// static char *admpo_ib_run(const OrtApi *api, OrtSession *s, const OrtIoBinding *b) {
// 	return admpo_ib_msg(api, api->RunWithBinding(s, NULL, b));
// }
// static char *admpo_ib_sync_inputs(const OrtApi *api, OrtIoBinding *b) {
// 	return admpo_ib_msg(api, api->SynchronizeBoundInputs(b));
// }
// static char *admpo_ib_sync_outputs(const OrtApi *api, OrtIoBinding *b) {
// 	return admpo_ib_msg(api, api->SynchronizeBoundOutputs(b));
// }
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// live counts the C objects created here and not yet released.
var live atomic.Int64

// Live is the number of C objects (memory infos, allocators, buffers,
// values, bindings) this package created and has not released yet; tests
// check that it returns to its earlier value.
func Live() int { return int(live.Load()) }

// statusErr turns a message from the shim into an error and frees it.
func statusErr(m *C.char, what string) error {
	if m == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(m))
	return fmt.Errorf("iobind: %s: %s", what, C.GoString(m))
}

// Session is the OrtSession of an onnxruntime_go session, reached through
// the C API of the ONNX Runtime library it was loaded from. It does not own
// the session: release everything created from it before destroying that.
type Session struct {
	api      *C.OrtApi
	s        *C.OrtSession
	ins, out int
}

// Attach reaches the OrtSession behind s, an open session of the ONNX
// Runtime loaded from ortLib (the library onnxruntime_go loaded; infer's
// LibraryPath).
func Attach(s *ort.DynamicAdvancedSession, ortLib string) (*Session, error) {
	if !ort.IsInitialized() {
		return nil, errors.New("iobind: ONNX Runtime is not loaded (call infer.Init first)")
	}
	if s == nil {
		return nil, errors.New("iobind: nil session")
	}
	cs := C.CString(ortLib)
	defer C.free(unsafe.Pointer(cs))
	a := C.admpo_ib_api(cs)
	if a == nil {
		return nil, fmt.Errorf("iobind: no ONNX Runtime with API version %d is loaded from %s (pass the library infer.Init loaded)", C.ORT_API_VERSION, ortLib)
	}
	p := sessionPtr(s)
	if p == nil {
		return nil, errors.New("iobind: the session is closed")
	}
	out := &Session{api: a, s: p}
	var n C.size_t
	if err := statusErr(C.admpo_ib_input_count(a, p, &n), "SessionGetInputCount"); err != nil {
		return nil, err
	}
	out.ins = int(n)
	if err := statusErr(C.admpo_ib_output_count(a, p, &n), "SessionGetOutputCount"); err != nil {
		return nil, err
	}
	out.out = int(n)
	return out, nil
}

// sessionPtr returns the OrtSession behind s. onnxruntime_go v1.27.0's
// DynamicAdvancedSession holds only a *AdvancedSession, whose first field is
// that pointer (TestSessionPointer checks this against the model's input
// and output counts); nil once the session is destroyed.
func sessionPtr(s *ort.DynamicAdvancedSession) *C.OrtSession {
	adv := *(*unsafe.Pointer)(unsafe.Pointer(s))
	if adv == nil {
		return nil
	}
	return *(**C.OrtSession)(adv)
}

// Counts returns the session's numbers of inputs and outputs as the C API
// reports them.
func (s *Session) Counts() (inputs, outputs int) { return s.ins, s.out }

// Kind is where a buffer's memory lives.
type Kind int

const (
	// CPU is host memory.
	CPU Kind = iota
	// CUDA is the memory of a CUDA device, as ONNX Runtime's CUDA provider
	// allocates it.
	CUDA
)

// String names the kind as ONNX Runtime's memory info does ("Cpu", "Cuda").
func (k Kind) String() string {
	switch k {
	case CPU:
		return "Cpu"
	case CUDA:
		return "Cuda"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Memory is an OrtMemoryInfo: device memory of a kind, on device Device
// (0 for the CPU), with OrtDeviceAllocator and OrtMemTypeDefault.
type Memory struct {
	api    *C.OrtApi
	p      *C.OrtMemoryInfo
	Kind   Kind
	Device int

	borrowed bool // InputMemory's: not released here
}

// NewMemory creates the memory info for kind on device id: CPU memory
// (CreateCpuMemoryInfo; id must be 0) or CUDA device id's memory (name
// "Cuda").
func (s *Session) NewMemory(kind Kind, id int) (*Memory, error) {
	if id < 0 || (kind == CPU && id != 0) {
		return nil, fmt.Errorf("iobind: memory %s device %d: no such device", kind, id)
	}
	m := &Memory{api: s.api, Kind: kind, Device: id}
	var msg *C.char
	switch kind {
	case CPU:
		msg = C.admpo_ib_mem_cpu(s.api, &m.p)
	case CUDA:
		name := C.CString("Cuda")
		defer C.free(unsafe.Pointer(name))
		msg = C.admpo_ib_mem(s.api, name, C.int(id), &m.p)
	default:
		return nil, fmt.Errorf("iobind: unknown memory kind %d", int(kind))
	}
	if err := statusErr(msg, "memory info "+kind.String()); err != nil {
		return nil, err
	}
	live.Add(1)
	return m, nil
}

// InputMemory is the device memory of the execution-provider device that
// the session's input idx was assigned to (SessionGetEpDeviceForInputs,
// then EpDevice_MemoryInfo): the memory info of a provider added through
// the plugin API as that provider itself names it, where a "Cuda" memory
// info of NewMemory might not match its allocator. It fails when the input
// has no provider device (one added the older way, or the CPU provider by
// default) or the provider's device memory is host memory.
func (s *Session) InputMemory(idx int) (*Memory, error) {
	var p *C.OrtMemoryInfo
	var gpu, id C.int
	if err := statusErr(C.admpo_ib_input_mem(s.api, s.s, C.size_t(max(idx, 0)), &p, &gpu, &id), fmt.Sprintf("the device memory of input %d", idx)); err != nil {
		return nil, err
	}
	if p == nil || gpu == 0 {
		return nil, fmt.Errorf("iobind: input %d has no provider device with device memory", idx)
	}
	// Owned by the provider's device: Release leaves it alone.
	return &Memory{api: s.api, p: p, Kind: CUDA, Device: int(id), borrowed: true}, nil
}

// Release frees the memory info; values created with it keep their own copy.
func (m *Memory) Release() {
	if m != nil && m.borrowed {
		m.p = nil
		return
	}
	if m != nil && m.p != nil {
		C.admpo_ib_release_mem(m.api, m.p)
		m.p = nil
		live.Add(-1)
	}
}

// Allocator is the session's allocator for one memory (CreateAllocator).
type Allocator struct {
	api *C.OrtApi
	p   *C.OrtAllocator
	mem *Memory
}

// NewAllocator returns the session's allocator for mem. A session has one
// for CUDA memory only when it runs on the CUDA provider.
func (s *Session) NewAllocator(mem *Memory) (*Allocator, error) {
	if mem == nil || mem.p == nil {
		return nil, errors.New("iobind: allocator: memory info is released")
	}
	a := &Allocator{api: s.api, mem: mem}
	if err := statusErr(C.admpo_ib_allocator(s.api, s.s, mem.p, &a.p), fmt.Sprintf("the session's allocator for %s memory on device %d", mem.Kind, mem.Device)); err != nil {
		return nil, err
	}
	live.Add(1)
	return a, nil
}

// Release frees the allocator; free its buffers first.
func (a *Allocator) Release() {
	if a != nil && a.p != nil {
		C.admpo_ib_release_allocator(a.api, a.p)
		a.p = nil
		live.Add(-1)
	}
}

// Buffer is memory that values are created over: from an Allocator (in its
// memory) or from NewHost (host memory from malloc, which Go may read and
// write through Float32s and Int64s).
type Buffer struct {
	p     unsafe.Pointer
	bytes int
	kind  Kind
	alloc *Allocator // nil: malloc
}

// Alloc allocates bytes (> 0) of the allocator's memory.
func (a *Allocator) Alloc(bytes int) (*Buffer, error) {
	if a == nil || a.p == nil {
		return nil, errors.New("iobind: alloc: allocator is released")
	}
	if bytes <= 0 {
		return nil, fmt.Errorf("iobind: alloc: %d bytes", bytes)
	}
	b := &Buffer{bytes: bytes, kind: a.mem.Kind, alloc: a}
	if err := statusErr(C.admpo_ib_alloc(a.api, a.p, C.size_t(bytes), &b.p), fmt.Sprintf("allocating %d bytes of %s memory", bytes, a.mem.Kind)); err != nil {
		return nil, err
	}
	if b.p == nil {
		return nil, fmt.Errorf("iobind: allocating %d bytes of %s memory: no memory", bytes, a.mem.Kind)
	}
	live.Add(1)
	return b, nil
}

// NewHost allocates bytes (> 0) of zeroed host memory with calloc.
func NewHost(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("iobind: host buffer: %d bytes", bytes)
	}
	p := C.calloc(C.size_t(bytes), 1)
	if p == nil {
		return nil, fmt.Errorf("iobind: host buffer: no memory for %d bytes", bytes)
	}
	live.Add(1)
	return &Buffer{p: p, bytes: bytes, kind: CPU}, nil
}

// Bytes is the buffer's size.
func (b *Buffer) Bytes() int { return b.bytes }

// Kind is where the buffer's memory lives.
func (b *Buffer) Kind() Kind { return b.kind }

// Float32s views host memory as float32s (nil for device memory or a
// freed buffer). The view is valid until Free.
func (b *Buffer) Float32s() []float32 {
	if b == nil || b.p == nil || b.kind != CPU {
		return nil
	}
	return unsafe.Slice((*float32)(b.p), b.bytes/4)
}

// Int64s views host memory as int64s (nil for device memory or a freed
// buffer). The view is valid until Free.
func (b *Buffer) Int64s() []int64 {
	if b == nil || b.p == nil || b.kind != CPU {
		return nil
	}
	return unsafe.Slice((*int64)(b.p), b.bytes/8)
}

// Free releases the memory (before its allocator); values over it must no
// longer be used.
func (b *Buffer) Free() error {
	if b == nil || b.p == nil {
		return nil
	}
	p := b.p
	b.p = nil
	live.Add(-1)
	if b.alloc == nil {
		C.free(p)
		return nil
	}
	if b.alloc.p == nil {
		return errors.New("iobind: free: the buffer's allocator was released first")
	}
	return statusErr(C.admpo_ib_free(b.alloc.api, b.alloc.p, p), "freeing a buffer")
}

// Type is a tensor element type.
type Type int

// The element types of the tensors made here (ONNX's numbering).
const (
	Float32 Type = C.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
	Int64   Type = C.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64
)

func (t Type) size() int {
	switch t {
	case Float32:
		return 4
	case Int64:
		return 8
	}
	return 0
}

// Value is an OrtValue: a tensor over part of a buffer.
type Value struct {
	api *C.OrtApi
	p   *C.OrtValue
}

// NewValue creates a tensor of type t and shape over buf, starting off
// elements into it, described by mem (whose kind must be the buffer's).
// The buffer must outlive the value and every run it is bound to. A shape
// with a zero dimension is an empty tensor.
func NewValue(mem *Memory, buf *Buffer, t Type, off int, shape ...int64) (*Value, error) {
	size := t.size()
	switch {
	case size == 0:
		return nil, fmt.Errorf("iobind: value: unknown element type %d", int(t))
	case mem == nil || mem.p == nil:
		return nil, errors.New("iobind: value: memory info is released")
	case buf == nil || buf.p == nil:
		return nil, errors.New("iobind: value: buffer is freed")
	case mem.Kind != buf.kind:
		return nil, fmt.Errorf("iobind: value: memory info %s for a buffer of %s memory", mem.Kind, buf.kind)
	case off < 0:
		return nil, fmt.Errorf("iobind: value: offset %d", off)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("iobind: value: shape %v has a negative dimension", shape)
		}
		n *= d
	}
	if end := (int64(off) + n) * int64(size); end > int64(buf.bytes) {
		return nil, fmt.Errorf("iobind: value: shape %v at element %d needs %d bytes of a %d-byte buffer", shape, off, end, buf.bytes)
	}
	cshape := (*C.int64_t)(C.malloc(C.size_t(max(len(shape), 1)) * 8))
	defer C.free(unsafe.Pointer(cshape))
	cs := unsafe.Slice(cshape, max(len(shape), 1))
	for i, d := range shape {
		cs[i] = C.int64_t(d)
	}
	v := &Value{api: mem.api}
	p := unsafe.Add(buf.p, off*size)
	if err := statusErr(C.admpo_ib_value(mem.api, mem.p, p, C.size_t(n*int64(size)), cshape, C.size_t(len(shape)), C.int(t), &v.p), fmt.Sprintf("tensor %v", shape)); err != nil {
		return nil, err
	}
	live.Add(1)
	return v, nil
}

// Release frees the value (not its memory). A binding it is bound to keeps
// its own reference.
func (v *Value) Release() {
	if v != nil && v.p != nil {
		C.admpo_ib_release_value(v.api, v.p)
		v.p = nil
		live.Add(-1)
	}
}

// Binding is an OrtIoBinding of one session.
type Binding struct {
	s     *Session
	p     *C.OrtIoBinding
	names map[string]*C.char
}

// NewBinding creates an I/O binding for the session.
func (s *Session) NewBinding() (*Binding, error) {
	b := &Binding{s: s, names: map[string]*C.char{}}
	if err := statusErr(C.admpo_ib_binding(s.api, s.s, &b.p), "CreateIoBinding"); err != nil {
		return nil, err
	}
	live.Add(1)
	return b, nil
}

func (b *Binding) name(n string) *C.char {
	c, ok := b.names[n]
	if !ok {
		c = C.CString(n)
		b.names[n] = c
	}
	return c
}

func (b *Binding) check(v *Value) error {
	switch {
	case b == nil || b.p == nil:
		return errors.New("iobind: binding is released")
	case v == nil || v.p == nil:
		return errors.New("iobind: value is released")
	}
	return nil
}

// BindInput binds the session's input name to v, replacing an earlier
// binding. ONNX Runtime may copy a value in another memory than the one the
// input needs right away: write the value's data before binding it.
func (b *Binding) BindInput(name string, v *Value) error {
	if err := b.check(v); err != nil {
		return err
	}
	return statusErr(C.admpo_ib_bind_input(b.s.api, b.p, b.name(name), v.p), "binding input "+name)
}

// BindOutput binds the session's output name to v, whose memory the next
// run writes.
func (b *Binding) BindOutput(name string, v *Value) error {
	if err := b.check(v); err != nil {
		return err
	}
	return statusErr(C.admpo_ib_bind_output(b.s.api, b.p, b.name(name), v.p), "binding output "+name)
}

// Clear unbinds every input and output.
func (b *Binding) Clear() {
	if b != nil && b.p != nil {
		C.admpo_ib_clear(b.s.api, b.p)
	}
}

// Run runs the session on the bound values (RunWithBinding).
func (b *Binding) Run() error {
	if b == nil || b.p == nil {
		return errors.New("iobind: run: binding is released")
	}
	return statusErr(C.admpo_ib_run(b.s.api, b.s.s, b.p), "RunWithBinding")
}

// SyncInputs waits for the copies of bound inputs to their devices
// (SynchronizeBoundInputs).
func (b *Binding) SyncInputs() error {
	if b == nil || b.p == nil {
		return errors.New("iobind: sync: binding is released")
	}
	return statusErr(C.admpo_ib_sync_inputs(b.s.api, b.p), "SynchronizeBoundInputs")
}

// SyncOutputs waits until the bound outputs are written
// (SynchronizeBoundOutputs).
func (b *Binding) SyncOutputs() error {
	if b == nil || b.p == nil {
		return errors.New("iobind: sync: binding is released")
	}
	return statusErr(C.admpo_ib_sync_outputs(b.s.api, b.p), "SynchronizeBoundOutputs")
}

// Release frees the binding and its references to bound values.
func (b *Binding) Release() {
	if b == nil || b.p == nil {
		return
	}
	C.admpo_ib_release_binding(b.s.api, b.p)
	b.p = nil
	for _, c := range b.names {
		C.free(unsafe.Pointer(c))
	}
	b.names = nil
	live.Add(-1)
}
