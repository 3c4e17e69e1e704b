package sacdev_test

import (
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestBCMatchesCPU: on emu, one and three BC steps agree with sac.BC
// (models.BCGraph and models.Adam) within 1e-5 of each tensor's largest
// value, with no outliers; likewise with the step recorded as a graph.
func TestBCMatchesCPU(t *testing.T) {
	d := emu.New()
	defer d.Close()
	for _, steps := range []int{1, 3} {
		sacdevtest.CompareBC(t, d, sacdevtest.BCOptions{Tol: 1e-5, Steps: steps})
	}
	t.Run("graph", func(t *testing.T) { sacdevtest.CompareBC(t, d, sacdevtest.BCOptions{Tol: 1e-5, Steps: 3, Graph: true}) })
}

func TestBCErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	ok := sacdev.BCConfig{ObsDim: 3, ActDim: 2, Hidden: []int{4}, Batch: 5, LR: 1e-3,
		Scale: []float32{1, 1}, Bias: []float32{0, 0}}
	for name, mod := range map[string]func(*sacdev.BCConfig){
		"obs":    func(c *sacdev.BCConfig) { c.ObsDim = 0 },
		"hidden": func(c *sacdev.BCConfig) { c.Hidden = []int{0} },
		"scale":  func(c *sacdev.BCConfig) { c.Scale = []float32{1} },
		"lr":     func(c *sacdev.BCConfig) { c.LR = 0 },
	} {
		c := ok
		mod(&c)
		if _, err := sacdev.NewBC(d, c); err == nil {
			t.Errorf("NewBC with a bad %s succeeded", name)
		}
	}
	bc, err := sacdev.NewBC(d, ok)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if _, err := bc.Loss(); err == nil {
		t.Error("Loss before any step succeeded")
	}
	if err := bc.Upload(make([]float32, 15), make([]float32, 9)); err == nil {
		t.Error("Upload with short actions succeeded")
	}
	if err := bc.SetWeights([][]float32{make([]float32, 12)}); err == nil {
		t.Error("SetWeights with one tensor succeeded")
	}
	if err := bc.SetOptim(device.AdamState{T: -1}); err == nil {
		t.Error("SetOptim with -1 steps succeeded")
	}
}

// BenchmarkBCStep times the BC step on emu.
func BenchmarkBCStep(b *testing.B) {
	d := emu.New()
	defer d.Close()
	sacdevtest.BenchBCStep(b, d)
}

// TestBCReorderedWithinGPUTolerance: with every matrix product summed in
// float64 (sacdevtest.Reordered), three BC steps agree with sac.BC within
// device/cuda's TestBC tolerance (1e-4, 0.1% outliers).
func TestBCReorderedWithinGPUTolerance(t *testing.T) {
	if testing.Short() {
		t.Skip("float64 products in Go: a few seconds")
	}
	d := emu.New()
	defer d.Close()
	sacdevtest.CompareBC(t, sacdevtest.Reordered(d), sacdevtest.BCOptions{Tol: 1e-4, Outliers: 1e-3})
}
