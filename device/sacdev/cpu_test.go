package sacdev_test

import (
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestUpdateMatchesCPU: on emu, three updates (actor every update and
// every second one) agree with sac.Agent within 1e-5, but for at most 1e-4
// of a tensor's weights (within two Adam steps each); so do two updates at
// the quick preset's 128x128 and at 100x36. emu sums as the CPU does, but
// its squashed-Gaussian head rounds otherwise (the CPU's is cpukern's
// float32 polynomials): a gradient within rounding of zero then takes a
// slightly different first Adam step (one critic weight of 65,536 at
// hopper's sizes, 1.7e-6 apart).
func TestUpdateMatchesCPU(t *testing.T) {
	d := emu.New()
	defer d.Close()
	sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-5, Outliers: 1e-4})
	// The quick preset's sizes and sizes that are no multiple of a block.
	for _, h := range [][]int{{128, 128}, {100, 36}} {
		sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-5, Outliers: 1e-4, ActorEvery: []int{1}, Updates: 2, Hidden: h})
	}
}

// TestUpdateReorderedWithinGPUTolerance: with every matrix product summed
// in float64 (sacdevtest.Reordered: other rounding, as cuBLAS's), two
// updates still agree with sac.Agent within the GPU test's tolerance (1e-4,
// no outliers needed; the largest difference is about 7e-6, also over five
// updates), so device/cuda's TestSAC checks the update, not the summation
// order.
func TestUpdateReorderedWithinGPUTolerance(t *testing.T) {
	if testing.Short() {
		t.Skip("float64 products in Go: a few seconds")
	}
	d := emu.New()
	defer d.Close()
	sacdevtest.Compare(t, sacdevtest.Reordered(d), sacdevtest.Options{Tol: 1e-4, ActorEvery: []int{1}, Updates: 2})
}
