package datasets

/*
#cgo linux,amd64 CFLAGS: -I/usr/include/hdf5/serial
#cgo linux,arm64 CFLAGS: -I/usr/include/hdf5/serial
#cgo linux,amd64 LDFLAGS: -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5
#cgo linux,arm64 LDFLAGS: -L/usr/lib/aarch64-linux-gnu/hdf5/serial -lhdf5
#cgo darwin CFLAGS: -I/usr/local/include -I/opt/homebrew/include
#cgo darwin LDFLAGS: -L/usr/local/lib -L/opt/homebrew/lib -lhdf5
#include <stdlib.h>
#include <string.h>
#include "hdf5.h"

// Memory types for admpo_read.
enum { ADMPO_F32 = 0, ADMPO_F64 = 1, ADMPO_I64 = 2, ADMPO_NATIVE_OF_FILE = 3 };

static hid_t admpo_get_type(hid_t obj, int is_attr) {
	return is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
}

// admpo_read reads a whole dataset or attribute into buf, converted by HDF5
// to the memory type named by want.
static herr_t admpo_read(hid_t obj, int is_attr, int want, void *buf) {
	hid_t mt = -1, ft = -1;
	int own = 0;
	switch (want) {
	case ADMPO_F32: mt = H5T_NATIVE_FLOAT; break;
	case ADMPO_F64: mt = H5T_NATIVE_DOUBLE; break;
	case ADMPO_I64: mt = H5T_NATIVE_LLONG; break;
	default:
		ft = admpo_get_type(obj, is_attr);
		if (ft < 0) return -1;
		mt = H5Tget_native_type(ft, H5T_DIR_ASCEND);
		H5Tclose(ft);
		if (mt < 0) return -1;
		own = 1;
	}
	herr_t rc = is_attr ? H5Aread(obj, mt, buf)
	                    : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	if (own) H5Tclose(mt);
	return rc;
}

// admpo_type_info reports the class and size of an object's stored type and
// whether it is a variable-length string.
static herr_t admpo_type_info(hid_t obj, int is_attr, int *cls, size_t *size, int *vlen_str) {
	hid_t t = admpo_get_type(obj, is_attr);
	if (t < 0) return -1;
	*cls = (int)H5Tget_class(t);
	*size = H5Tget_size(t);
	*vlen_str = (*cls == H5T_STRING) ? (H5Tis_variable_str(t) > 0) : 0;
	H5Tclose(t);
	return 0;
}

// admpo_read_string reads a scalar or one-element string into a malloc'd,
// NUL-terminated buffer that the caller frees.
static char *admpo_read_string(hid_t obj, int is_attr) {
	hid_t ft = admpo_get_type(obj, is_attr);
	if (ft < 0) return NULL;
	char *out = NULL;
	if (H5Tget_class(ft) != H5T_STRING) { H5Tclose(ft); return NULL; }
	hid_t mt = H5Tcopy(H5T_C_S1);
	if (H5Tis_variable_str(ft) > 0) {
		char *s = NULL;
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(ft));
		herr_t rc = is_attr ? H5Aread(obj, mt, &s)
		                    : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s);
		if (rc >= 0) {
			out = strdup(s ? s : "");
			H5free_memory(s);
		}
	} else {
		size_t n = H5Tget_size(ft);
		H5Tset_size(mt, n + 1);
		H5Tset_cset(mt, H5Tget_cset(ft));
		H5Tset_strpad(mt, H5T_STR_NULLTERM);
		out = calloc(n + 2, 1);
		herr_t rc = is_attr ? H5Aread(obj, mt, out)
		                    : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
		if (rc < 0) { free(out); out = NULL; }
	}
	H5Tclose(mt);
	H5Tclose(ft);
	return out;
}

// admpo_npoints returns the number of elements of a dataset or attribute.
static long long admpo_npoints(hid_t obj, int is_attr) {
	hid_t s = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
	if (s < 0) return -1;
	long long n = (long long)H5Sget_simple_extent_npoints(s);
	H5Sclose(s);
	return n;
}

typedef struct { char *buf; size_t len, cap; } admpo_names;

static herr_t admpo_attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op) {
	(void)loc; (void)info;
	admpo_names *n = op;
	size_t l = strlen(name) + 1;
	if (n->len + l > n->cap) {
		size_t c = (n->cap + l) * 2;
		char *b = realloc(n->buf, c);
		if (!b) return -1;
		n->buf = b; n->cap = c;
	}
	memcpy(n->buf + n->len, name, l);
	n->len += l;
	return 0;
}

// admpo_attr_names lists the attribute names of obj as NUL-separated strings
// in a malloc'd buffer of *len bytes (NULL when there are none).
static char *admpo_attr_names(hid_t obj, size_t *len) {
	admpo_names n = {NULL, 0, 0};
	hsize_t idx = 0;
	if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, admpo_attr_cb, &n) < 0) {
		free(n.buf);
		*len = 0;
		return NULL;
	}
	*len = n.len;
	return n.buf;
}

// admpo_enum_bool adds h5py's bool members FALSE = 0 and TRUE = 1 to a
// one-byte enum type.
static herr_t admpo_enum_bool(hid_t t) {
	signed char v = 0;
	if (H5Tenum_insert(t, "FALSE", &v) < 0) return -1;
	v = 1;
	return H5Tenum_insert(t, "TRUE", &v);
}

// admpo_write_vlen_str stores value as a scalar variable-length UTF-8 string
// dataset, as h5py does for a Python str.
static herr_t admpo_write_vlen_str(hid_t loc, const char *name, const char *value) {
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t < 0) return -1;
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hid_t s = H5Screate(H5S_SCALAR);
	hid_t d = H5Dcreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	herr_t rc = -1;
	if (d >= 0) {
		rc = H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value);
		if (H5Dclose(d) < 0) rc = -1;
	}
	H5Sclose(s);
	H5Tclose(t);
	return rc;
}

typedef struct { char buf[1024]; size_t len; } admpo_errbuf;

static herr_t admpo_err_cb(unsigned n, const H5E_error2_t *e, void *op) {
	(void)n;
	admpo_errbuf *b = op;
	if (!e->desc || !*e->desc) return 0;
	size_t l = strlen(e->desc);
	if (b->len + l + 3 >= sizeof b->buf) return 0;
	if (b->len) { memcpy(b->buf + b->len, "; ", 2); b->len += 2; }
	memcpy(b->buf + b->len, e->desc, l);
	b->len += l;
	b->buf[b->len] = 0;
	return 0;
}

// admpo_last_error copies the descriptions on this thread's HDF5 error stack,
// outermost first, into out (size 1024) and clears the stack.
static void admpo_last_error(char *out) {
	admpo_errbuf b;
	b.len = 0;
	b.buf[0] = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, admpo_err_cb, &b);
	H5Eclear2(H5E_DEFAULT);
	memcpy(out, b.buf, b.len + 1);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"gonum.org/v1/hdf5"
)

// h5mu serialises this package's HDF5 calls. The goroutine also stays on one
// OS thread while it holds the lock, because HDF5 keeps its error stack per
// thread and h5detail reads it after a failed call.
var h5mu sync.Mutex

// h5lock takes the package's HDF5 lock; call the returned function to free it.
func h5lock() func() {
	h5mu.Lock()
	runtime.LockOSThread()
	C.H5Eclear2(C.H5E_DEFAULT)
	return func() {
		runtime.UnlockOSThread()
		h5mu.Unlock()
	}
}

// createH5 creates (or truncates) the HDF5 file path under the package's
// lock, fills it with write and closes it; a failed close is an error.
func createH5(path string, write func(f *hdf5.File) error) (err error) {
	unlock := h5lock()
	defer unlock()
	f, err := hdf5.CreateFile(path, hdf5.F_ACC_TRUNC)
	if err != nil {
		return h5wrap(err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = h5wrap(fmt.Errorf("closing: %w", cerr))
		}
	}()
	return write(f)
}

// openH5 opens the HDF5 file path read-only under the package's lock;
// closeFile closes it and frees the lock. A file that does not open is
// described by its size and HDF5's error text.
func openH5(path string) (f *hdf5.File, closeFile func(), err error) {
	st, err := statFile(path)
	if err != nil {
		return nil, nil, err
	}
	unlock := h5lock()
	f, err = hdf5.OpenFile(path, hdf5.F_ACC_RDONLY)
	if err != nil {
		detail := h5detail()
		isHDF5 := hdf5.IsHDF5(path)
		unlock()
		if !isHDF5 {
			return nil, nil, fmt.Errorf("not an HDF5 file (no HDF5 signature; %d bytes)", st.Size())
		}
		return nil, nil, fmt.Errorf("cannot open, the file is corrupt or truncated (%d bytes): %s", st.Size(), detail)
	}
	return f, func() {
		f.Close()
		unlock()
	}, nil
}

// h5detail returns HDF5's own description of the last failure on this thread
// (for example "truncated file: eof = ..."), or "" when there is none.
func h5detail() string {
	var buf [1024]C.char
	C.admpo_last_error(&buf[0])
	parts := strings.Split(C.GoString(&buf[0]), "; ")
	if len(parts) > 4 { // keep the outermost step and the innermost causes
		parts = append([]string{parts[0], "..."}, parts[len(parts)-2:]...)
	}
	return strings.Join(parts, "; ")
}

// h5wrap adds HDF5's error-stack text to err.
func h5wrap(err error) error {
	if err == nil {
		return nil
	}
	if d := h5detail(); d != "" {
		return fmt.Errorf("%w (hdf5: %s)", err, d)
	}
	return err
}

// hid is the HDF5 identifier of any gonum/hdf5 object.
type hid interface{ ID() int64 }

// memKind selects the memory type HDF5 converts to in h5read.
type memKind C.int

const (
	memF32          memKind = C.ADMPO_F32
	memF64          memKind = C.ADMPO_F64
	memI64          memKind = C.ADMPO_I64
	memNativeOfFile memKind = C.ADMPO_NATIVE_OF_FILE
)

// firstElem is the address of b's first element (nil when b is empty).
func firstElem[T any](b []T) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// h5read reads all of a dataset (isAttr false) or attribute into buf, whose
// length in elements of the memory type must equal the object's point count.
// For memNativeOfFile buf must be []uint8 and the stored type one byte wide.
func h5read(obj hid, isAttr bool, kind memKind, buf any) error {
	n := C.admpo_npoints(C.hid_t(obj.ID()), cbool(isAttr))
	if n < 0 {
		return h5wrap(errors.New("cannot get the element count"))
	}
	var p unsafe.Pointer
	var have int
	var want memKind
	switch b := buf.(type) {
	case []float32:
		p, have, want = firstElem(b), len(b), memF32
	case []float64:
		p, have, want = firstElem(b), len(b), memF64
	case []int64:
		p, have, want = firstElem(b), len(b), memI64
	case []uint8:
		p, have, want = firstElem(b), len(b), memNativeOfFile
		info, err := h5typeInfo(obj, isAttr)
		if err != nil {
			return err
		}
		if info.size != 1 {
			return fmt.Errorf("h5read: stored type is %d bytes wide, want 1", info.size)
		}
	default:
		return fmt.Errorf("h5read: unsupported buffer %T", buf)
	}
	if kind != want {
		return fmt.Errorf("h5read: a %T buffer needs memory kind %d, got %d", buf, want, kind)
	}
	if int64(have) != int64(n) {
		return fmt.Errorf("h5read: buffer holds %d elements, object has %d", have, int64(n))
	}
	if have == 0 {
		return nil
	}
	if C.admpo_read(C.hid_t(obj.ID()), cbool(isAttr), C.int(kind), p) < 0 {
		return h5wrap(errors.New("read failed"))
	}
	return nil
}

// typeInfo describes a stored HDF5 type.
type typeInfo struct {
	class   hdf5.TypeClass
	size    int
	vlenStr bool
}

// h5typeInfo returns the stored type of a dataset or attribute.
func h5typeInfo(obj hid, isAttr bool) (typeInfo, error) {
	var cls, vl C.int
	var size C.size_t
	if C.admpo_type_info(C.hid_t(obj.ID()), cbool(isAttr), &cls, &size, &vl) < 0 {
		return typeInfo{}, h5wrap(errors.New("cannot get the stored type"))
	}
	return typeInfo{class: hdf5.TypeClass(cls), size: int(size), vlenStr: vl != 0}, nil
}

// h5readString reads a scalar string dataset or attribute.
func h5readString(obj hid, isAttr bool) (string, error) {
	s := C.admpo_read_string(C.hid_t(obj.ID()), cbool(isAttr))
	if s == nil {
		return "", h5wrap(errors.New("cannot read string"))
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s), nil
}

// h5attrNames lists the names of the attributes attached to obj.
func h5attrNames(obj hid) ([]string, error) {
	var n C.size_t
	buf := C.admpo_attr_names(C.hid_t(obj.ID()), &n)
	if buf == nil {
		if d := h5detail(); d != "" {
			return nil, fmt.Errorf("listing attributes: %s", d)
		}
		return nil, nil
	}
	defer C.free(unsafe.Pointer(buf))
	raw := C.GoBytes(unsafe.Pointer(buf), C.int(n))
	var names []string
	start := 0
	for i, c := range raw {
		if c == 0 {
			names = append(names, string(raw[start:i]))
			start = i + 1
		}
	}
	return names, nil
}

// h5boolType returns h5py's bool type: a one-byte signed enum with members
// FALSE = 0 and TRUE = 1. Close it after use.
func h5boolType() (*hdf5.Datatype, error) {
	t, err := hdf5.CreateDatatype(hdf5.T_ENUM, 1)
	if err != nil {
		return nil, h5wrap(fmt.Errorf("creating the bool enum type: %w", err))
	}
	if C.admpo_enum_bool(C.hid_t(t.ID())) < 0 {
		t.Close()
		return nil, h5wrap(errors.New("adding the bool enum members"))
	}
	return t, nil
}

// h5writeString stores value as a scalar variable-length UTF-8 string
// dataset named name under loc.
func h5writeString(loc hid, name, value string) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	cv := C.CString(value)
	defer C.free(unsafe.Pointer(cv))
	if C.admpo_write_vlen_str(C.hid_t(loc.ID()), cn, cv) < 0 {
		return h5wrap(fmt.Errorf("writing string dataset %q", name))
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// h5readOne reads the value of a one-element dataset (isAttr false) or
// attribute with h5read.
func h5readOne[T float64 | int64 | uint8](obj hid, isAttr bool, kind memKind) (T, error) {
	v := make([]T, 1)
	err := h5read(obj, isAttr, kind, v)
	return v[0], err
}

// h5readFloat64s reads the n values of a dataset as T with h5read and
// returns them as float64s.
func h5readFloat64s[T float64 | int64 | uint8](ds hid, kind memKind, n int) ([]float64, error) {
	raw := make([]T, n)
	if err := h5read(ds, false, kind, raw); err != nil {
		return nil, err
	}
	vals := make([]float64, n)
	for i, v := range raw {
		vals[i] = float64(v)
	}
	return vals, nil
}

// h5npoints returns the element count of a dataset or attribute (-1 on error).
func h5npoints(obj hid, isAttr bool) int64 {
	return int64(C.admpo_npoints(C.hid_t(obj.ID()), cbool(isAttr)))
}

// h5linkExists reports whether the '/'-separated path exists below loc,
// telling a missing link apart from a failed look-up (a corrupt file).
func h5linkExists(loc hid, path string) (bool, error) {
	parts := strings.Split(path, "/")
	for i := range parts {
		p := C.CString(strings.Join(parts[:i+1], "/"))
		rc := C.H5Lexists(C.hid_t(loc.ID()), p, C.H5P_DEFAULT)
		C.free(unsafe.Pointer(p))
		if rc < 0 {
			return false, h5wrap(fmt.Errorf("cannot look up %q (corrupt file?)", path))
		}
		if rc == 0 {
			return false, nil
		}
	}
	return true, nil
}
