package gpu

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
//
// static const char *admpo_try_dlopen(const char *path) {
//	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
//	if (h == NULL) {
//		const char *e = dlerror();
//		return e ? e : "dlopen failed";
//	}
//	dlclose(h);
//	return NULL;
// }
import "C"

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"
)

// ErrNotBuilt is returned by driver.Query in a binary built without the
// admpo_cuda tag.
var ErrNotBuilt = errors.New("built without the admpo_cuda tag (rebuild with `go build -tags admpo_cuda` after `make setup-cuda-toolkit`)")

// Device is one CUDA device as the driver reports it.
type Device struct {
	Name         string
	Memory       int64 // bytes
	Major, Minor int   // compute capability
}

// Info is what the CUDA driver reports.
type Info struct {
	Driver  string // driver API version, e.g. "13.0"
	Devices []Device
}

// DriverVersion formats the CUDA driver API's integer version (1000*major +
// 10*minor) as "major.minor".
func DriverVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Loadable reports whether dlopen accepts the shared library at path (a path
// with a slash) or of that name (searched the way the dynamic loader
// searches). The library is closed again.
func Loadable(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if e := C.admpo_try_dlopen(cs); e != nil {
		return fmt.Errorf("gpu: loading %s: %s", path, C.GoString(e))
	}
	return nil
}

// defaultLibDirs are the dynamic loader's trusted directories on
// Debian/Ubuntu x86-64 (and the CUDA toolkit's usual home).
var defaultLibDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	"/usr/local/cuda/lib64",
}

// LibraryDirs lists where the dynamic loader looks, in its order:
// $LD_LIBRARY_PATH, the directories of the ldconfig cache, the default
// directories. Duplicates are dropped.
func LibraryDirs() []string {
	var dirs []string
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	dirs = append(dirs, ldconfigDirs()...)
	dirs = append(dirs, defaultLibDirs...)
	seen := map[string]bool{}
	out := dirs[:0]
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// ldconfigDirs returns the directories of the libraries in the ldconfig
// cache (`ldconfig -p`), or nil where ldconfig is absent.
func ldconfigDirs() []string {
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		ldconfig = "/sbin/ldconfig"
	}
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		return nil
	}
	return parseLdconfig(out)
}

// parseLdconfig extracts the directories from `ldconfig -p` output, whose
// lines read "\tlibfoo.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libfoo.so.1".
func parseLdconfig(out []byte) []string {
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		_, p, ok := strings.Cut(sc.Text(), " => ")
		if ok && filepath.IsAbs(strings.TrimSpace(p)) {
			dirs = append(dirs, filepath.Dir(strings.TrimSpace(p)))
		}
	}
	return dirs
}

// FindLibrary returns the first file named name in dirs, or "" when none
// holds it.
func FindLibrary(name string, dirs []string) string {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}
