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
		// All members' rows of a layer are one buffer: 2^32·5 inputs.
		"stacked": func(c *ensdev.Config) { c.Members, c.Batch = 1<<12, 1<<20 },
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

// counting wraps a device and counts the work a step queues.
type counting struct {
	device.Device
	launches, gemms, batched int
}

func (c *counting) Launch(name string, n int, args ...any) error {
	c.launches++
	return c.Device.Launch(name, n, args...)
}

func (c *counting) Gemm(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda int,
	b device.Buffer, ldb int, beta float32, cb device.Buffer, ldc int) error {
	c.gemms++
	return c.Device.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cb, ldc)
}

func (c *counting) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda,
	strideA int, b device.Buffer, ldb, strideB int, beta float32, cb device.Buffer, ldc, strideC int, batch int) error {
	c.batched++
	return c.Device.GemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, cb, ldc,
		strideC, batch)
}

// TestLaunchesPerStep: a step at MBPO's size (4x200, weight decay on every
// layer) queues 21 strided-batched products and 31 kernel launches
// whatever the number of members (issue #32: seven members one after
// another took 147 products and 217 launches).
func TestLaunchesPerStep(t *testing.T) {
	for _, members := range []int{1, 7} {
		e := emu.New()
		d := &counting{Device: e}
		cfg := ensdev.Config{ObsDim: 11, ActDim: 3, Hidden: []int{200, 200, 200, 200}, Members: members, Batch: 4,
			LR: 1e-3, Decay: []float64{2.5e-5, 5e-5, 7.5e-5, 7.5e-5, 1e-4}}
		tr, err := ensdev.New(d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b ensdev.Batch
		for range members {
			b.X = append(b.X, make([]float32, 4*14))
			b.Target = append(b.Target, make([]float32, 4*12))
			b.Weight = append(b.Weight, []float32{1, 1, 1, 0})
		}
		if err := tr.Upload(b); err != nil {
			t.Fatal(err)
		}
		*d = counting{Device: e}
		if err := tr.Step(); err != nil {
			t.Fatal(err)
		}
		if d.launches != 31 || d.gemms != 0 || d.batched != 21 {
			t.Errorf("%d members: a step queued %d launches, %d products and %d batched products, want 31, 0 and 21",
				members, d.launches, d.gemms, d.batched)
		}
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
		e.Close()
	}
}

// TestHostCopiesRoundTrip: weights and an Adam state set from the host in
// Sizes' order come back the same, every value its own, through the
// stacked layout the device keeps them in.
func TestHostCopiesRoundTrip(t *testing.T) {
	d := emu.New()
	defer d.Close()
	cfg := ensdev.Config{ObsDim: 3, ActDim: 2, Hidden: []int{4, 6}, Members: 3, Batch: 5, LR: 1e-3}
	tr, err := ensdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	next := float32(0)
	tensors := func() [][]float32 {
		var ts [][]float32
		for _, n := range cfg.Sizes() {
			x := make([]float32, n)
			for i := range x {
				next++
				x[i] = next
			}
			ts = append(ts, x)
		}
		return ts
	}
	zeros := func(ts [][]float32) [][]float32 {
		out := make([][]float32, len(ts))
		for i, x := range ts {
			out[i] = make([]float32, len(x))
		}
		return out
	}
	same := func(what string, got, want [][]float32) {
		t.Helper()
		for i := range want {
			for j := range want[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("%s: tensor %d value %d is %v, want %v", what, i, j, got[i][j], want[i][j])
				}
			}
		}
	}
	w, m, v := tensors(), tensors(), tensors()
	if err := tr.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetOptim(device.AdamState{M: m, V: v, T: 7}); err != nil {
		t.Fatal(err)
	}
	gw := zeros(w)
	if err := tr.WeightsInto(gw); err != nil {
		t.Fatal(err)
	}
	same("weights", gw, w)
	o := device.AdamState{M: zeros(m), V: zeros(v)}
	if err := tr.OptimInto(&o); err != nil {
		t.Fatal(err)
	}
	same("adam m", o.M, m)
	same("adam v", o.V, v)
	if o.T != 7 {
		t.Errorf("adam steps %d, want 7", o.T)
	}
	if err := tr.SetOptim(device.AdamState{M: m, V: v[:1], T: 1}); err == nil {
		t.Error("SetOptim with one V tensor succeeded")
	}
	if err := tr.WeightsInto(gw[1:]); err == nil {
		t.Error("WeightsInto with a tensor short succeeded")
	}
}
