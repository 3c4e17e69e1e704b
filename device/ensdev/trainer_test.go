package ensdev_test

import (
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/ensdev"
	"github.com/admpo/admpo/device/ensdev/ensdevtest"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestStepMatchesCPU: on emu, one train step of all seven members (MBPO's
// 4x200 size, batch 64, weight decay, padding rows) agrees with models'
// ensemble graph and models.Adam within 1e-5 of each tensor's largest
// value (the Adam moments all, the weights but 0.05% of them, each within
// two Adam steps: near-zero gradients summed in another order, see
// ensdevtest.Options.Outliers) and the NLLs and the loss relatively; so do
// three steps of a small ensemble, directly and as a graph, with no
// outliers.
func TestStepMatchesCPU(t *testing.T) {
	d := emu.New()
	defer d.Close()
	t.Run("mbpo", func(t *testing.T) { ensdevtest.Compare(t, d, ensdevtest.Options{Tol: 1e-5, Outliers: 5e-4}) })
	small := ensdevtest.Options{Hidden: []int{16, 12}, Members: 3, Batch: 10, Steps: 3, Tol: 1e-5}
	t.Run("small", func(t *testing.T) { ensdevtest.Compare(t, d, small) })
	small.Graph = true
	t.Run("graph", func(t *testing.T) { ensdevtest.Compare(t, d, small) })
}

func TestErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	ok := ensdev.Config{ObsDim: 3, ActDim: 2, Hidden: []int{4}, Members: 2, Batch: 5, LR: 1e-3}
	for name, mod := range map[string]func(*ensdev.Config){
		"obs":     func(c *ensdev.Config) { c.ObsDim = 0 },
		"hidden":  func(c *ensdev.Config) { c.Hidden = []int{0} },
		"members": func(c *ensdev.Config) { c.Members = 0 },
		"decay":   func(c *ensdev.Config) { c.Decay = []float64{1e-4} },
		"lr":      func(c *ensdev.Config) { c.LR = 0 },
	} {
		c := ok
		mod(&c)
		if _, err := ensdev.New(d, c); err == nil {
			t.Errorf("New with a bad %s succeeded", name)
		}
	}
	tr, err := ensdev.New(d, ok)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, _, err := tr.Losses(); err == nil {
		t.Error("Losses before any step succeeded")
	}
	if err := tr.Upload(ensdev.Batch{}); err == nil {
		t.Error("Upload without member batches succeeded")
	}
	if err := tr.SetWeights([][]float32{make([]float32, 20)}); err == nil {
		t.Error("SetWeights with one tensor succeeded")
	}
	if err := tr.SetNLLSums([]float64{1}); err == nil {
		t.Error("SetNLLSums with one value for two members succeeded")
	}
	if err := tr.SetOptim(device.AdamState{T: -1}); err == nil {
		t.Error("SetOptim with -1 steps succeeded")
	}
}

// BenchmarkEnsembleStep times the step on emu.
func BenchmarkEnsembleStep(b *testing.B) {
	d := emu.New()
	defer d.Close()
	ensdevtest.BenchStep(b, d, false)
}

// TestStepReorderedWithinGPUTolerance: with every matrix product summed in
// float64 (sacdevtest.Reordered: other rounding, as cuBLAS's), a step at
// MBPO's size still agrees with the CPU graph within device/cuda's
// TestEnsemble tolerance (1e-4, 0.1% outliers), so that test checks the
// step, not the summation order.
func TestStepReorderedWithinGPUTolerance(t *testing.T) {
	if testing.Short() {
		t.Skip("float64 products in Go: a few seconds")
	}
	d := emu.New()
	defer d.Close()
	ensdevtest.Compare(t, sacdevtest.Reordered(d), ensdevtest.Options{Tol: 1e-4, Outliers: 1e-3})
}
