package cublas

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
// typedef int (*cublas_sgemm_strided_batched_t)(void *, int, int, int, int, int, const float *, const float *, int,
//                                               long long, const float *, int, long long, const float *, float *,
//                                               int, long long, int);
//
// struct admpo_cublas_fns {
// 	void *lib;
// 	cublas_create_t create;
// 	cublas_destroy_t destroy;
// 	cublas_set_stream_t set_stream;
// 	cublas_set_math_mode_t set_math_mode;
// 	cublas_get_version_t get_version;
// 	cublas_sgemm_t sgemm;
// 	cublas_sgemm_strided_batched_t sgemm_strided_batched;
// };
// static struct admpo_cublas_fns admpo_cublas;
//
// // admpo_cublas_open loads path and resolves every function; only when all
// // resolve do they replace the ones in use. It returns NULL or what failed.
// static const char *admpo_cublas_open(const char *path) {
// 	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
// 	if (lib == NULL) {
// 		const char *e = dlerror();
// 		return e ? e : "dlopen failed";
// 	}
// 	struct admpo_cublas_fns f = {lib};
// 	struct { void **fn; const char *name; } syms[] = {
// 		{(void **)&f.create, "cublasCreate_v2"},
// 		{(void **)&f.destroy, "cublasDestroy_v2"},
// 		{(void **)&f.set_stream, "cublasSetStream_v2"},
// 		{(void **)&f.set_math_mode, "cublasSetMathMode"},
// 		{(void **)&f.get_version, "cublasGetVersion_v2"},
// 		{(void **)&f.sgemm, "cublasSgemm_v2"},
// 		{(void **)&f.sgemm_strided_batched, "cublasSgemmStridedBatched"},
// 	};
// 	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
// 		*syms[i].fn = dlsym(lib, syms[i].name);
// 		if (*syms[i].fn == NULL) {
// 			dlclose(lib);
// 			return syms[i].name;
// 		}
// 	}
// 	admpo_cublas = f;
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
// static int admpo_cublas_sgemm_strided_batched(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha,
//                                               uintptr_t a, int lda, long long sa, uintptr_t b, int ldb, long long sb,
//                                               float beta, uintptr_t c, int ldc, long long sc, int batch) {
// 	return admpo_cublas.sgemm_strided_batched((void *)h, ta, tb, m, n, k, &alpha, (const float *)a, lda, sa,
// 	                                          (const float *)b, ldb, sb, &beta, (float *)c, ldc, sc, batch);
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
	loadOnce sync.Once
	loadPath string
	loadErr  error
)

// candidates are the files tried in order: ADMPO_CUBLAS, the sonames
// through the loader's search path, then the usual install directories
// (the CUDA toolkit, and the nvidia-* wheels of a Python environment).
func candidates() []string {
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

// open loads the library at path and resolves the functions.
func open(path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if e := C.admpo_cublas_open(cp); e != nil {
		return errors.New(C.GoString(e))
	}
	return nil
}

// Load opens cuBLAS once per process and returns the file it opened.
func Load() (string, error) {
	loadOnce.Do(func() {
		var msgs []string
		for _, p := range candidates() {
			err := open(p)
			if err == nil {
				loadPath = p
				return
			}
			msgs = append(msgs, p+": "+err.Error())
		}
		loadErr = errors.New("cublas: cannot load cuBLAS (set ADMPO_CUBLAS to libcublas.so's path): " + strings.Join(msgs, "; "))
	})
	return loadPath, loadErr
}

// Handle is a cuBLAS handle, bound to the CUDA context current when New
// made it and to a stream.
type Handle C.uintptr_t

// New loads cuBLAS if needed and makes a handle in the current context
// that queues its work on stream (a CUstream), with pedantic math
// (CUBLAS_PEDANTIC_MATH) or the default one. It returns cuBLAS's version.
func New(stream uintptr, pedantic bool) (Handle, int, error) {
	if _, err := Load(); err != nil {
		return 0, 0, err
	}
	var h C.uintptr_t
	if st := C.admpo_cublas_create(&h); st != 0 {
		return 0, 0, fmt.Errorf("cublas: cublasCreate: status %d", int(st))
	}
	if st := C.admpo_cublas_set_stream(h, C.uintptr_t(stream)); st != 0 {
		C.admpo_cublas_destroy(h)
		return 0, 0, fmt.Errorf("cublas: cublasSetStream: status %d", int(st))
	}
	mode := C.int(cublasDefaultMath)
	if pedantic {
		mode = cublasPedantic
	}
	if st := C.admpo_cublas_set_math_mode(h, mode); st != 0 {
		C.admpo_cublas_destroy(h)
		return 0, 0, fmt.Errorf("cublas: cublasSetMathMode(%d): status %d", int(mode), int(st))
	}
	var v C.int
	if st := C.admpo_cublas_version(h, &v); st != 0 {
		v = -1
	}
	return Handle(h), int(v), nil
}

// Sgemm queues C = alpha·op(A)·op(B) + beta·C on column-major matrices at
// device addresses a, b, c (cublasSgemm; the caller checks the shapes).
func (h Handle) Sgemm(ta, tb bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int,
	beta float32, c uintptr, ldc int) error {
	st := C.admpo_cublas_sgemm(C.uintptr_t(h), op(ta), op(tb), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc))
	if st != 0 {
		return fmt.Errorf("cublas: cublasSgemm: status %d", int(st))
	}
	return nil
}

// SgemmStridedBatched queues batch products C_i = alpha·op(A_i)·op(B_i) +
// beta·C_i on column-major matrices, A_i at device address a + 4·strideA·i
// and likewise B_i and C_i (cublasSgemmStridedBatched; the caller checks
// the shapes).
func (h Handle) SgemmStridedBatched(ta, tb bool, m, n, k int, alpha float32, a uintptr, lda, strideA int, b uintptr,
	ldb, strideB int, beta float32, c uintptr, ldc, strideC int, batch int) error {
	st := C.admpo_cublas_sgemm_strided_batched(C.uintptr_t(h), op(ta), op(tb), C.int(m), C.int(n), C.int(k),
		C.float(alpha), C.uintptr_t(a), C.int(lda), C.longlong(strideA), C.uintptr_t(b), C.int(ldb),
		C.longlong(strideB), C.float(beta), C.uintptr_t(c), C.int(ldc), C.longlong(strideC), C.int(batch))
	if st != 0 {
		return fmt.Errorf("cublas: cublasSgemmStridedBatched: status %d", int(st))
	}
	return nil
}

// op is cuBLAS's operation for a trans flag.
func op(t bool) C.int {
	if t {
		return cublasOpT
	}
	return cublasOpN
}

// Destroy releases the handle.
func (h Handle) Destroy() error {
	if st := C.admpo_cublas_destroy(C.uintptr_t(h)); st != 0 {
		return fmt.Errorf("cublas: cublasDestroy: status %d", int(st))
	}
	return nil
}
