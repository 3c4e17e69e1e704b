package cublas

import (
	"os"
	"strings"
	"testing"
)

// TestLoad opens the host's cuBLAS when it has one (e.g. Debian's CUDA
// toolkit's libcublas.so.11) and resolves every function.
func TestLoad(t *testing.T) {
	p, err := Load()
	if err != nil {
		if os.Getenv("ADMPO_GPU_TEST") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no cuBLAS on this host: %v", err)
	}
	t.Logf("cuBLAS: %s", p)
}

// TestOpenErrors checks what open reports for a missing file and for a
// library without cuBLAS's functions (OpenBLAS, which admpo links).
func TestOpenErrors(t *testing.T) {
	if err := open("/nonexistent/libcublas.so.99"); err == nil || !strings.Contains(err.Error(), "libcublas.so.99") {
		t.Errorf("open of a missing file: %v", err)
	}
	err := open("libopenblas.so.0")
	if err == nil {
		t.Fatal("open of OpenBLAS succeeded")
	}
	if strings.Contains(err.Error(), "cannot open") {
		t.Skipf("no libopenblas.so.0: %v", err)
	}
	if err.Error() != "cublasCreate_v2" {
		t.Errorf("open of OpenBLAS: %v, want the missing cublasCreate_v2", err)
	}
}

func TestCandidates(t *testing.T) {
	t.Setenv("ADMPO_CUBLAS", "/x/libcublas.so")
	if c := candidates(); len(c) != 1 || c[0] != "/x/libcublas.so" {
		t.Errorf("with ADMPO_CUBLAS: %v", c)
	}
	t.Setenv("ADMPO_CUBLAS", "")
	if c := candidates(); len(c) < 3 || c[0] != "libcublas.so.13" || c[2] != "libcublas.so.11" {
		t.Errorf("candidates: %v", c)
	}
}
