package benchmarks

import (
	"os"
	"runtime"
	"strconv"

	"github.com/admpo/admpo/internal/blas"
)

// machine returns the facts every benchmark table prints.
func machine() map[string]string {
	blas.Use()
	h := map[string]string{
		"blas":         blas.Describe(),
		"blas threads": strconv.Itoa(blas.Threads()),
		"cpus":         strconv.Itoa(runtime.NumCPU()),
		"go":           runtime.Version(),
	}
	if v := os.Getenv("OPENBLAS_NUM_THREADS"); v != "" {
		h["OPENBLAS_NUM_THREADS"] = v
	}
	return h
}
