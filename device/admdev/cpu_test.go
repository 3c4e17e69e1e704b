package admdev_test

import (
	"testing"

	"github.com/admpo/admpo/device/admdev/admdevtest"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestStepMatchesCPU: on emu, three train steps (a small model, with and
// without dropout) agree with models' ADM training graph and models.Adam
// within 1e-5: losses, outputs, every weight and the Adam moments.
func TestStepMatchesCPU(t *testing.T) {
	for _, nd := range []bool{false, true} {
		name := "dropout"
		if nd {
			name = "no_dropout"
		}
		t.Run(name, func(t *testing.T) {
			d := emu.New()
			defer d.Close()
			admdevtest.Compare(t, d, admdevtest.Options{Tol: 1e-5, NoDropout: nd})
		})
	}
}

// TestGraphStepMatchesCPU: the same with the step recorded as a device
// graph (emu records it) from the second step on, over four steps: the
// replays read the current Adam constants and dropout states.
func TestGraphStepMatchesCPU(t *testing.T) {
	d := emu.New()
	defer d.Close()
	admdevtest.Compare(t, d, admdevtest.Options{Tol: 1e-5, Graph: true, Steps: 4})
}

// TestReferenceStepMatchesCPU: the same at the paper's size (3x200 GRU,
// four ResBlocks, m = 5) with batch 64, for two steps. Losses and outputs
// agree within 1e-5; of each tensor's weights at most 0.01% (in practice
// one or two of 120000) may be past 1e-5 of its largest weight, each within
// two Adam steps: weights whose gradient is near zero, where Adam's step
// g/(|g|+eps) turns rounding differences of the sums (the CPU's
// polynomial exp and vectorised LayerNorm sums against emu's libm and
// sequential ones) into differences of order 1e-6.
func TestReferenceStepMatchesCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of emulated steps")
	}
	d := emu.New()
	defer d.Close()
	admdevtest.Compare(t, d, admdevtest.Options{Cfg: admdevtest.Reference, Batch: 64, Steps: 2, Tol: 1e-5,
		Outliers: 1e-4})
}

// BenchmarkStep times the emulated step at the Reference size, batch 256
// (compare models' BenchmarkADMTrainStep).
func BenchmarkStep(b *testing.B) {
	d := emu.New()
	defer d.Close()
	admdevtest.BenchStep(b, d, false)
}

// TestStepReorderedWithinGPUTolerance: with every matrix product summed in
// float64 (sacdevtest.Reordered: other rounding, as cuBLAS's), three steps
// of the small model still agree with the CPU graph within device/cuda's
// TestADM tolerance, so that test checks the step, not the summation order.
// (At the paper's size, batch 64, two steps pass too, largest weight
// difference 5e-5 of the tensor's largest, but take half a minute here.)
func TestStepReorderedWithinGPUTolerance(t *testing.T) {
	d := emu.New()
	defer d.Close()
	admdevtest.Compare(t, sacdevtest.Reordered(d), admdevtest.Options{Tol: 1e-4, Outliers: 1e-3})
}
