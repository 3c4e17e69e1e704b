//go:build admpo_cuda

package cudaep

// #cgo CFLAGS: -I${SRCDIR}/../../third_party/onnxruntime
// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
// #include <string.h>
// #include "onnxruntime_c_api.h"
//
// typedef const OrtApiBase *(*admpo_get_api_base_fn)(void);
//
// // admpo_api returns the OrtApi of the ONNX Runtime already loaded from
// // lib (RTLD_NOLOAD: it never loads a second copy), or NULL.
// static const OrtApi *admpo_api(const char *lib) {
// 	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
// 	if (h == NULL) return NULL;
// 	admpo_get_api_base_fn get = (admpo_get_api_base_fn)dlsym(h, "OrtGetApiBase");
// 	const OrtApi *api = get ? get()->GetApi(ORT_API_VERSION) : NULL;
// 	dlclose(h); // onnxruntime_go's handle keeps the library loaded
// 	return api;
// }
//
// // admpo_msg turns a status into a malloc'd message (NULL for success)
// // and releases it.
// static char *admpo_msg(const OrtApi *api, OrtStatus *s) {
// 	if (s == NULL) return NULL;
// 	char *m = strdup(api->GetErrorMessage(s));
// 	api->ReleaseStatus(s);
// 	return m;
// }
//
// // admpo_env returns a reference to the process's OrtEnv: ONNX Runtime
// // keeps one per process, so this is the env onnxruntime_go created.
// static char *admpo_env(const OrtApi *api, OrtEnv **env) {
// 	return admpo_msg(api, api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "admpo", env));
// }
//
// typedef struct {
// 	const char *ep, *vendor;
// 	int hw;
// 	uint32_t vendor_id, device_id;
// } admpo_dev;
//
// // admpo_devices fills out[0..cap) with the env's OrtEpDevices; *n is their
// // total count.
// static char *admpo_devices(const OrtApi *api, admpo_dev *out, size_t cap, size_t *n) {
// 	OrtEnv *env = NULL;
// 	char *m = admpo_env(api, &env);
// 	if (m) return m;
// 	const OrtEpDevice *const *devs = NULL;
// 	m = admpo_msg(api, api->GetEpDevices(env, &devs, n));
// 	for (size_t i = 0; m == NULL && i < *n && i < cap; i++) {
// 		const OrtHardwareDevice *hw = api->EpDevice_Device(devs[i]);
// 		out[i].ep = api->EpDevice_EpName(devs[i]);
// 		out[i].vendor = api->EpDevice_EpVendor(devs[i]);
// 		out[i].hw = (int)api->HardwareDevice_Type(hw);
// 		out[i].vendor_id = api->HardwareDevice_VendorId(hw);
// 		out[i].device_id = api->HardwareDevice_DeviceId(hw);
// 	}
// 	api->ReleaseEnv(env);
// 	return m;
// }
//
// // admpo_append appends the provider ep for all of its devices to so;
// // *matched is how many devices it had (0: nothing was appended).
// static char *admpo_append(const OrtApi *api, OrtSessionOptions *so, const char *ep,
// 		const char *const *keys, const char *const *vals, size_t nopt, size_t *matched) {
// 	OrtEnv *env = NULL;
// 	char *m = admpo_env(api, &env);
// 	if (m) return m;
// 	const OrtEpDevice *const *devs = NULL;
// 	size_t n = 0;
// 	*matched = 0;
// 	m = admpo_msg(api, api->GetEpDevices(env, &devs, &n));
// 	const OrtEpDevice **sel = m ? NULL : malloc((n ? n : 1) * sizeof *sel);
// 	if (m == NULL && sel == NULL) m = strdup("out of memory");
// 	for (size_t i = 0; m == NULL && i < n; i++) {
// 		if (strcmp(api->EpDevice_EpName(devs[i]), ep) == 0) sel[(*matched)++] = devs[i];
// 	}
// 	if (m == NULL && *matched > 0) {
// 		m = admpo_msg(api, api->SessionOptionsAppendExecutionProvider_V2(so, env, sel, *matched, keys, vals, nopt));
// 	}
// 	free(sel);
// 	api->ReleaseEnv(env);
// 	return m;
// }
//
// // admpo_append_at appends the device at position idx of the env's
// // OrtEpDevices to so, for its provider, after checking that the provider
// // there is still ep (*found is 0 when it is not, and nothing is appended).
// static char *admpo_append_at(const OrtApi *api, OrtSessionOptions *so, size_t idx, const char *ep,
// 		const char *const *keys, const char *const *vals, size_t nopt, int *found) {
// 	OrtEnv *env = NULL;
// 	char *m = admpo_env(api, &env);
// 	if (m) return m;
// 	const OrtEpDevice *const *devs = NULL;
// 	size_t n = 0;
// 	*found = 0;
// 	m = admpo_msg(api, api->GetEpDevices(env, &devs, &n));
// 	if (m == NULL && idx < n && strcmp(api->EpDevice_EpName(devs[idx]), ep) == 0) {
// 		*found = 1;
// 		const OrtEpDevice *sel[1] = {devs[idx]};
// 		m = admpo_msg(api, api->SessionOptionsAppendExecutionProvider_V2(so, env, sel, 1, keys, vals, nopt));
// 	}
// 	api->ReleaseEnv(env);
// 	return m;
// }
//
// // admpo_providers copies the names of the providers the core was built
// // with (GetAvailableProviders) into out[0..cap) as malloc'd strings; *n is
// // their total count.
// static char *admpo_providers(const OrtApi *api, char **out, int cap, int *n) {
// 	char **names = NULL;
// 	*n = 0;
// 	char *m = admpo_msg(api, api->GetAvailableProviders(&names, n));
// 	if (m) return m;
// 	for (int i = 0; i < *n && i < cap; i++) out[i] = strdup(names[i]);
// 	return admpo_msg(api, api->ReleaseAvailableProviders(names, *n));
// }
//
// static char *admpo_config_entry(const OrtApi *api, const OrtSessionOptions *so, const char *key, char *buf, size_t *size) {
// 	return admpo_msg(api, api->GetSessionConfigEntry(so, key, buf, size));
// }
//
// static int admpo_same_env(const OrtApi *api) {
// 	OrtEnv *a = NULL, *b = NULL;
// 	char *m = admpo_env(api, &a);
// 	if (m) { free(m); return -1; }
// 	m = admpo_env(api, &b);
// 	if (m) { free(m); api->ReleaseEnv(a); return -1; }
// 	int same = a == b;
// 	api->ReleaseEnv(b);
// 	api->ReleaseEnv(a);
// 	return same;
// }
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// Register registers the CUDA provider library at providerLib with the
// loaded ONNX Runtime under RegistrationName. ONNX Runtime must be
// initialised (infer.Init) first.
func Register(providerLib string) error {
	if _, err := os.Stat(providerLib); err != nil {
		return fmt.Errorf("cudaep: CUDA provider library: %w (run `make setup-gpu`)", err)
	}
	if !ort.IsInitialized() {
		return errors.New("cudaep: ONNX Runtime is not loaded (call infer.Init first)")
	}
	if err := ort.RegisterExecutionProviderLibrary(RegistrationName, providerLib); err != nil {
		return fmt.Errorf("cudaep: registering %s: %w (it needs the CUDA 13 libraries libcublas.so.13, libcublasLt.so.13, libcudart.so.13, libcurand.so.10 and the driver's libcuda.so.1 on the loader's path, e.g. via LD_LIBRARY_PATH)", providerLib, err)
	}
	return nil
}

// api returns the OrtApi of the ONNX Runtime loaded from ortLib.
func api(ortLib string) (*C.OrtApi, error) {
	if !ort.IsInitialized() {
		return nil, errors.New("cudaep: ONNX Runtime is not loaded (call infer.Init first)")
	}
	cs := C.CString(ortLib)
	defer C.free(unsafe.Pointer(cs))
	a := C.admpo_api(cs)
	if a == nil {
		return nil, fmt.Errorf("cudaep: no ONNX Runtime with API version %d is loaded from %s (pass the library infer.Init loaded)", C.ORT_API_VERSION, ortLib)
	}
	return a, nil
}

// statusErr turns a message from the shim into an error and frees it.
func statusErr(m *C.char, what string) error {
	if m == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(m))
	return fmt.Errorf("cudaep: %s: %s", what, C.GoString(m))
}

var hardware = map[C.int]string{C.OrtHardwareDeviceType_CPU: "cpu", C.OrtHardwareDeviceType_GPU: "gpu", C.OrtHardwareDeviceType_NPU: "npu"}

// Devices lists the OrtEpDevices of the ONNX Runtime loaded from ortLib:
// the built-in CPU provider's, and those of registered provider libraries.
func Devices(ortLib string) ([]Device, error) {
	a, err := api(ortLib)
	if err != nil {
		return nil, err
	}
	const capacity = 64
	buf := (*[capacity]C.admpo_dev)(C.malloc(C.size_t(capacity) * C.size_t(unsafe.Sizeof(C.admpo_dev{}))))
	defer C.free(unsafe.Pointer(buf))
	var n C.size_t
	if err := statusErr(C.admpo_devices(a, &buf[0], capacity, &n), "GetEpDevices"); err != nil {
		return nil, err
	}
	if n > capacity {
		n = capacity
	}
	out := make([]Device, n)
	for i := range out {
		d := buf[i]
		hw, ok := hardware[d.hw]
		if !ok {
			hw = fmt.Sprintf("type %d", int(d.hw))
		}
		out[i] = Device{Index: i, EP: C.GoString(d.ep), Vendor: C.GoString(d.vendor), Hardware: hw, VendorID: uint32(d.vendor_id), DeviceID: uint32(d.device_id)}
	}
	return out, nil
}

// AvailableProviders lists the execution providers of the ONNX Runtime core
// loaded from ortLib (GetAvailableProviders): those compiled in and those
// its provider bridge can load from libraries beside it (the 1.30 release
// lists CUDAExecutionProvider; the 1.29 core of `make setup-gpu` lists
// CPUExecutionProvider only). Plugin providers are not listed.
func AvailableProviders(ortLib string) ([]string, error) {
	a, err := api(ortLib)
	if err != nil {
		return nil, err
	}
	const capacity = 64
	buf := (*[capacity]*C.char)(C.malloc(C.size_t(capacity) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(buf))
	var n C.int
	m := C.admpo_providers(a, &buf[0], capacity, &n)
	count := min(int(n), capacity)
	out := make([]string, count)
	for i := range out {
		out[i] = C.GoString(buf[i])
		C.free(unsafe.Pointer(buf[i]))
	}
	if err := statusErr(m, "GetAvailableProviders"); err != nil {
		return nil, err
	}
	return out, nil
}

// optionsPtr returns the OrtSessionOptions behind opts. onnxruntime_go
// v1.27.0's SessionOptions is a struct whose only field is that pointer
// (TestOptionsPointer checks this against a config entry set through
// onnxruntime_go).
func optionsPtr(opts *ort.SessionOptions) *C.OrtSessionOptions {
	return *(**C.OrtSessionOptions)(unsafe.Pointer(opts))
}

// Append adds the execution provider ep (EPName for CUDA) on all of its
// devices to opts, with the provider options given, through
// SessionOptionsAppendExecutionProvider_V2. ortLib is the loaded ONNX
// Runtime library. It fails, naming the providers present, when ep has no
// device (its library was not registered or found no hardware).
func Append(opts *ort.SessionOptions, ortLib, ep string, options map[string]string) error {
	var matched C.size_t
	err := withAppendArgs(opts, ortLib, ep, ep, options, func(a *C.OrtApi, cep *C.char, kv *cOptions) *C.char {
		return C.admpo_append(a, optionsPtr(opts), cep, kv.keys, kv.vals, kv.n, &matched)
	})
	if err != nil {
		return err
	}
	if matched == 0 {
		devs, err := Devices(ortLib)
		if err != nil {
			return err
		}
		var have []string
		for _, d := range devs {
			have = append(have, d.EP+" ("+d.Hardware+")")
		}
		return fmt.Errorf("cudaep: no device for %s in ONNX Runtime (it has: %s); register its library first (Register)", ep, strings.Join(have, ", "))
	}
	return nil
}

// withAppendArgs checks opts, finds the loaded ONNX Runtime's API and calls
// appendFn with the provider name ep and the options in C memory (freed
// after it returns); a failed status becomes an error naming what.
func withAppendArgs(opts *ort.SessionOptions, ortLib, ep, what string, options map[string]string, appendFn func(*C.OrtApi, *C.char, *cOptions) *C.char) error {
	if opts == nil || optionsPtr(opts) == nil {
		return errors.New("cudaep: session options are not initialised")
	}
	a, err := api(ortLib)
	if err != nil {
		return err
	}
	kv := newCOptions(options)
	defer kv.free()
	cep := C.CString(ep)
	defer C.free(unsafe.Pointer(cep))
	return statusErr(appendFn(a, cep, kv), "appending "+what)
}

// cOptions are provider options as C arrays of keys and values.
type cOptions struct {
	keys, vals **C.char
	n          C.size_t
	strs       []*C.char
}

// newCOptions copies options (sorted by key) into C memory; free releases it.
func newCOptions(options map[string]string) *cOptions {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := len(keys)
	// Zeroed (calloc): Go stores pointers into these arrays, and the garbage
	// collector's write barrier reads each slot's old word as a pointer.
	size := C.size_t(unsafe.Sizeof((*C.char)(nil)))
	o := &cOptions{keys: (**C.char)(C.calloc(C.size_t(n+1), size)), vals: (**C.char)(C.calloc(C.size_t(n+1), size)), n: C.size_t(n)}
	ck := unsafe.Slice(o.keys, n+1)
	cv := unsafe.Slice(o.vals, n+1)
	for i, k := range keys {
		ck[i], cv[i] = C.CString(k), C.CString(options[k])
		o.strs = append(o.strs, ck[i], cv[i])
	}
	ck[n], cv[n] = nil, nil
	return o
}

func (o *cOptions) free() {
	for _, p := range o.strs {
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(o.keys))
	C.free(unsafe.Pointer(o.vals))
}

// AppendDevice adds device d (one of Devices(ortLib)) with its provider and
// the provider options given to opts through
// SessionOptionsAppendExecutionProvider_V2.
func AppendDevice(opts *ort.SessionOptions, ortLib string, d Device, options map[string]string) error {
	var found C.int
	err := withAppendArgs(opts, ortLib, d.EP, d.String(), options, func(a *C.OrtApi, cep *C.char, kv *cOptions) *C.char {
		return C.admpo_append_at(a, optionsPtr(opts), C.size_t(d.Index), cep, kv.keys, kv.vals, kv.n, &found)
	})
	if err != nil {
		return err
	}
	if found == 0 {
		return fmt.Errorf("cudaep: device %s is no longer in ONNX Runtime's device list", d)
	}
	return nil
}

// AppendCUDA adds the CUDA provider on the device PickCUDA chooses among
// Devices(ortLib) to opts, with the provider options given, and returns that
// device. Register the provider library first. The error lists the devices
// found when none fits.
func AppendCUDA(opts *ort.SessionOptions, ortLib string, options map[string]string) (Device, error) {
	devs, err := Devices(ortLib)
	if err != nil {
		return Device{}, err
	}
	d, err := PickCUDA(devs)
	if err != nil {
		return Device{}, err
	}
	return d, AppendDevice(opts, ortLib, d, options)
}

// configEntry reads a session config entry through the C API (for tests).
func configEntry(opts *ort.SessionOptions, ortLib, key string) (string, error) {
	a, err := api(ortLib)
	if err != nil {
		return "", err
	}
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	buf := (*[256]C.char)(C.malloc(256))
	defer C.free(unsafe.Pointer(buf))
	size := C.size_t(256)
	if err := statusErr(C.admpo_config_entry(a, optionsPtr(opts), ckey, &buf[0], &size), "GetSessionConfigEntry "+key); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// sameEnv reports whether two CreateEnv calls return the same OrtEnv, the
// property the shim relies on to reach onnxruntime_go's env (for tests).
func sameEnv(ortLib string) (bool, error) {
	a, err := api(ortLib)
	if err != nil {
		return false, err
	}
	switch C.admpo_same_env(a) {
	case 1:
		return true, nil
	case 0:
		return false, nil
	}
	return false, errors.New("cudaep: CreateEnv failed")
}
