package blas

// #cgo LDFLAGS: -lopenblas
// char* openblas_get_corename(void);
// int openblas_get_num_threads(void);
// void openblas_set_num_threads(int);
import "C"

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

var once sync.Once

// Use makes Gorgonia multiply through OpenBLAS. It is safe to call many times.
func Use() {
	once.Do(func() { G.Use(netlib.Implementation{}) })
}

// CoreName is the OpenBLAS kernel set in use, e.g. "SkylakeX" or "Prescott".
func CoreName() string { return C.GoString(C.openblas_get_corename()) }

// Threads is the number of threads OpenBLAS uses.
func Threads() int { return int(C.openblas_get_num_threads()) }

// SetThreads sets the number of threads OpenBLAS uses (n >= 1). Small
// products (SAC's 256x256 layers at batch 256) run as fast on one thread,
// and a second thread only adds contention on a busy machine.
func SetThreads(n int) {
	if n >= 1 {
		C.openblas_set_num_threads(C.int(n))
	}
}

// Describe is a one-line summary for benchmark headers.
func Describe() string {
	env := os.Getenv("OPENBLAS_CORETYPE")
	if env == "" {
		env = "unset"
	}
	return "OpenBLAS core " + CoreName() + " (OPENBLAS_CORETYPE=" + env + ")"
}

// SuggestedCoreType reads /proc/cpuinfo and returns "SkylakeX" for AVX-512
// CPUs, "Haswell" for AVX2 ones and "" otherwise (let OpenBLAS decide).
func SuggestedCoreType() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return coreTypeFromFlags(string(b))
}

func coreTypeFromFlags(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		flags := " " + line + " "
		switch {
		case strings.Contains(flags, " avx512f ") && strings.Contains(flags, " avx512bw "):
			return "SkylakeX"
		case strings.Contains(flags, " avx2 "):
			return "Haswell"
		}
		return ""
	}
	return ""
}

// EnsureCoreType re-executes the running binary with OPENBLAS_CORETYPE set to
// SuggestedCoreType when the variable is unset. It returns only if nothing
// needed to change or the re-exec failed (then the slower default stays).
func EnsureCoreType() {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		return
	}
	ct := SuggestedCoreType()
	if ct == "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), "OPENBLAS_CORETYPE="+ct)
	_ = syscall.Exec(exe, os.Args, env)
}

// PeakSgemm measures single-precision matrix product speed through
// OpenBLAS: the best of reps n×n×n products, in GFLOP/s.
func PeakSgemm(n, reps int) float64 {
	a := make([]float32, n*n)
	b := make([]float32, n*n)
	c := make([]float32, n*n)
	for i := range a {
		a[i] = float32(i%7) * 0.1
		b[i] = float32(i%5) * 0.1
	}
	impl := netlib.Implementation{}
	best := 0.0
	for r := 0; r < reps; r++ {
		t := time.Now()
		impl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
		if g := 2 * float64(n) * float64(n) * float64(n) / time.Since(t).Seconds() / 1e9; g > best {
			best = g
		}
	}
	return best
}
