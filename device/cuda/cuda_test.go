//go:build admpo_cuda

package cuda

import (
	"os"
	"testing"

	"github.com/admpo/admpo/device/devicetest"
)

// open returns the first GPU with pedantic cuBLAS, or skips without
// ADMPO_GPU_TEST=1. (Without a GPU the binary does not get here: cu's
// initialisation ends the process first.)
func open(t testing.TB) *Device {
	t.Helper()
	if os.Getenv("ADMPO_GPU_TEST") != "1" {
		t.Skip("set ADMPO_GPU_TEST=1 to run the GPU tests")
	}
	d, err := Open(Config{Pedantic: true})
	if err != nil {
		t.Fatalf("ADMPO_GPU_TEST=1 but no usable GPU: %v", err)
	}
	t.Logf("device: %s", d.Name())
	return d
}

func TestSuite(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.Run(t, d, devicetest.Options{Tol: 1e-4})
}

func TestClose(t *testing.T) { devicetest.TestClose(t, open(t)) }

func TestMLP(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.TestMLP(t, d, 1e-4)
}

// TestTimeMLP prints the milliseconds per MLP train step on the GPU.
func TestTimeMLP(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.TimeMLP(t, d, 2000)
}

func BenchmarkMLPStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	devicetest.BenchMLP(b, d)
}
