//go:build admpo_cuda

package cuda

// cuBLAS, opened with dlopen: a handful of C trampolines over function
// pointers resolved from the library, so nothing links -lcublas.

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdint.h>
// #include <stddef.h>
// #include <stdlib.h>
//
// typedef int (*cublas_create_t)(void **);
// typedef int (*cublas_destroy_t)(void *);
// typedef int (*cublas_set_stream_t)(void *, void *);
// typedef int (*cublas_set_math_mode_t)(void *, int);
// typedef int (*cublas_get_version_t)(void *, int *);
// typedef int (*cublas_sgemm_t)(void *, int, int, int, int, int, const float *, const float *, int,
//                               const float *, int, const float *, float *, int);
//
// static struct {
// 	void *lib;
// 	cublas_create_t create;
// 	cublas_destroy_t destroy;
// 	cublas_set_stream_t set_stream;
// 	cublas_set_math_mode_t set_math_mode;
// 	cublas_get_version_t get_version;
// 	cublas_sgemm_t sgemm;
// } admpo_cublas;
//
// // admpo_cublas_open loads path and resolves the functions; it returns NULL
// // or an error message.
// static const char *admpo_cublas_open(const char *path) {
// 	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
// 	if (lib == NULL) {
// 		const char *e = dlerror();
// 		return e ? e : "dlopen failed";
// 	}
// 	struct { void **fn; const char *name; } syms[] = {
// 		{(void **)&admpo_cublas.create, "cublasCreate_v2"},
// 		{(void **)&admpo_cublas.destroy, "cublasDestroy_v2"},
// 		{(void **)&admpo_cublas.set_stream, "cublasSetStream_v2"},
// 		{(void **)&admpo_cublas.set_math_mode, "cublasSetMathMode"},
// 		{(void **)&admpo_cublas.get_version, "cublasGetVersion_v2"},
// 		{(void **)&admpo_cublas.sgemm, "cublasSgemm_v2"},
// 	};
// 	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
// 		*syms[i].fn = dlsym(lib, syms[i].name);
// 		if (*syms[i].fn == NULL) {
// 			dlclose(lib);
// 			return syms[i].name;
// 		}
// 	}
// 	admpo_cublas.lib = lib;
// 	return NULL;
// }
//
// static int admpo_cublas_create(uintptr_t *h) {
// 	void *p = NULL;
// 	int st = admpo_cublas.create(&p);
// 	*h = (uintptr_t)p;
// 	return st;
// }
// static int admpo_cublas_destroy(uintptr_t h) { return admpo_cublas.destroy((void *)h); }
// static int admpo_cublas_set_stream(uintptr_t h, uintptr_t s) { return admpo_cublas.set_stream((void *)h, (void *)s); }
// static int admpo_cublas_set_math_mode(uintptr_t h, int m) { return admpo_cublas.set_math_mode((void *)h, m); }
// static int admpo_cublas_version(uintptr_t h, int *v) { return admpo_cublas.get_version((void *)h, v); }
// static int admpo_cublas_sgemm(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda,
//                               uintptr_t b, int ldb, float beta, uintptr_t c, int ldc) {
// 	return admpo_cublas.sgemm((void *)h, ta, tb, m, n, k, &alpha, (const float *)a, lda, (const float *)b, ldb,
// 	                          &beta, (float *)c, ldc);
// }
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// cuBLAS constants (cublas_api.h).
const (
	cublasOpN         = 0
	cublasOpT         = 1
	cublasDefaultMath = 0
	cublasPedantic    = 2
)

var (
	blasOnce sync.Once
	blasPath string
	blasErr  error
)

// blasCandidates are the files tried in order: ADMPO_CUBLAS, the sonames
// through the loader's search path, then the usual install directories
// (the CUDA toolkit, and the nvidia-* wheels of a Python environment).
func blasCandidates() []string {
	var c []string
	if p := os.Getenv("ADMPO_CUBLAS"); p != "" {
		return []string{p}
	}
	sonames := []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}
	c = append(c, sonames...)
	for _, dir := range []string{"/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64",
		"/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib", "/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib",
		"/usr/lib/python3*/*-packages/nvidia/cu*/lib", "/usr/lib/python3*/*-packages/nvidia/cublas/lib",
		"/opt/conda/lib/python3*/site-packages/nvidia/cu*/lib", "/opt/conda/lib/python3*/site-packages/nvidia/cublas/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/cu*/lib", "/usr/local/lib/python3*/site-packages/nvidia/cublas/lib"} {
		for _, so := range sonames {
			m, _ := filepath.Glob(filepath.Join(dir, so))
			c = append(c, m...)
		}
	}
	return c
}

// openBLAS loads cuBLAS once per process.
func openBLAS() (string, error) {
	blasOnce.Do(func() {
		var msgs []string
		for _, p := range blasCandidates() {
			cp := C.CString(p)
			e := C.admpo_cublas_open(cp)
			C.free(unsafe.Pointer(cp))
			if e == nil {
				blasPath = p
				return
			}
			msgs = append(msgs, p+": "+C.GoString(e))
		}
		blasErr = errors.New("cuda: cannot load cuBLAS (set ADMPO_CUBLAS to libcublas.so's path): " + strings.Join(msgs, "; "))
	})
	return blasPath, blasErr
}

// blasHandle is a cuBLAS handle bound to the current context and a stream.
type blasHandle C.uintptr_t

func newBLAS(stream uintptr, pedantic bool) (blasHandle, int, error) {
	if _, err := openBLAS(); err != nil {
		return 0, 0, err
	}
	var h C.uintptr_t
	if st := C.admpo_cublas_create(&h); st != 0 {
		return 0, 0, fmt.Errorf("cuda: cublasCreate: status %d", int(st))
	}
	if st := C.admpo_cublas_set_stream(h, C.uintptr_t(stream)); st != 0 {
		C.admpo_cublas_destroy(h)
		return 0, 0, fmt.Errorf("cuda: cublasSetStream: status %d", int(st))
	}
	mode := C.int(cublasDefaultMath)
	if pedantic {
		mode = cublasPedantic
	}
	if st := C.admpo_cublas_set_math_mode(h, mode); st != 0 {
		C.admpo_cublas_destroy(h)
		return 0, 0, fmt.Errorf("cuda: cublasSetMathMode(%d): status %d", int(mode), int(st))
	}
	var v C.int
	if st := C.admpo_cublas_version(h, &v); st != 0 {
		v = -1
	}
	return blasHandle(h), int(v), nil
}

func (h blasHandle) sgemm(ta, tb bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int,
	beta float32, c uintptr, ldc int) error {
	op := func(t bool) C.int {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	st := C.admpo_cublas_sgemm(C.uintptr_t(h), op(ta), op(tb), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc))
	if st != 0 {
		return fmt.Errorf("cuda: cublasSgemm: status %d", int(st))
	}
	return nil
}

func (h blasHandle) destroy() error {
	if st := C.admpo_cublas_destroy(C.uintptr_t(h)); st != 0 {
		return fmt.Errorf("cuda: cublasDestroy: status %d", int(st))
	}
	return nil
}
