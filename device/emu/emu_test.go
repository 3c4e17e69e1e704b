package emu

import (
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
)

func TestSuite(t *testing.T) {
	d := New()
	defer d.Close()
	devicetest.Run(t, d, devicetest.Options{Tol: 1e-5, Large: 1<<14 + 3})
}

func TestClose(t *testing.T) { devicetest.TestClose(t, New()) }

// TestTable checks that every kernel has an emulation and nothing else.
func TestTable(t *testing.T) {
	names := map[string]bool{}
	for _, k := range device.Kernels() {
		names[k.Name] = true
		if table[k.Name] == nil {
			t.Errorf("kernel %s has no emulation", k.Name)
		}
	}
	for name := range table {
		if !names[name] {
			t.Errorf("emulation %s is not in device.Kernels", name)
		}
	}
}

func TestSourceHash(t *testing.T) {
	if len(sourceHash) != 64 {
		t.Fatalf("kernels.SourceHash() = %q", sourceHash)
	}
}

func TestMLP(t *testing.T) {
	d := New()
	defer d.Close()
	devicetest.TestMLP(t, d, 1e-5)
}

func TestTimeMLP(t *testing.T) {
	d := New()
	defer d.Close()
	devicetest.TimeMLP(t, d, 20)
}

func BenchmarkMLPStep(b *testing.B) {
	d := New()
	defer d.Close()
	devicetest.BenchMLP(b, d)
}

// BenchmarkRollKernels runs the roll-out's kernel benchmark at a size
// the CPU takes in a moment (cuda's is 131072 rows).
func BenchmarkRollKernels(b *testing.B) {
	d := New()
	defer d.Close()
	devicetest.BenchRollKernels(b, d, 8192)
}
