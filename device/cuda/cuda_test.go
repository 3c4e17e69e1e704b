//go:build admpo_cuda

package cuda

import (
	"os"
	"testing"

	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
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

// TestSAC runs the device's SAC learner beside sac.Agent on the CPU for
// three updates (hopper's sizes): weights within 1e-4 of each tensor's
// largest, losses and α within 1e-4 relatively; at most 0.1% of a tensor's
// weights may be past that, each within two Adam steps per update (see
// sacdevtest.Options.Outliers: near-zero gradients summed in cuBLAS's order).
func TestSAC(t *testing.T) {
	d := open(t)
	defer d.Close()
	sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-4, Outliers: 1e-3})
}

// TestTimeSAC prints the milliseconds per full SAC update on the GPU.
func TestTimeSAC(t *testing.T) {
	d := open(t)
	defer d.Close()
	sacdevtest.TimeUpdate(t, d, 2000)
}

func BenchmarkSACUpdate(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchUpdate(b, d)
}

// BenchmarkSACSampleUpdate adds drawing and uploading a batch's indices and
// noise (Learner.Sample from a device replay) to each update.
func BenchmarkSACSampleUpdate(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchSampleUpdate(b, d)
}
