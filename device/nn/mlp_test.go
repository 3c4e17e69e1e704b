package nn_test

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/nn"
)

// The training step itself is checked against a float64 reference by
// devicetest.TestMLP, run by device/emu's tests and device/cuda's.

func TestNewMLPErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	for _, c := range []struct {
		sizes []int
		batch int
	}{{[]int{3}, 4}, {[]int{3, 0, 1}, 4}, {[]int{3, 1}, 0}} {
		if _, err := nn.NewMLP(d, c.sizes, c.batch, 1e-3); err == nil {
			t.Errorf("NewMLP(%v, %d) succeeded", c.sizes, c.batch)
		}
	}
}

func TestStepShapeErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	net, err := nn.NewMLP(d, []int{3, 4, 2}, 5, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := d.Alloc(device.Float32, 5*3-1) // one value short
	y, _ := d.Alloc(device.Float32, 5*2)
	if err := net.Step(x, y); !errors.Is(err, device.ErrRange) {
		t.Errorf("Step with a short input: %v, want ErrRange", err)
	}
	x, _ = d.Alloc(device.Float32, 5*3)
	y, _ = d.Alloc(device.Float32, 5*2-1)
	if err := net.Step(x, y); !errors.Is(err, device.ErrRange) {
		t.Errorf("Step with short targets: %v, want ErrRange", err)
	}
	if err := net.Upload(net.Params(), [][]float32{{1}}); err == nil {
		t.Error("Upload of one slice for four buffers succeeded")
	}
	if err := net.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestForwardRows checks that nn.Forward over a prefix of rows gives the
// full batch's first rows bit for bit (the same products, fewer columns),
// leaves the rows past the prefix alone, and rejects what does not fit.
func TestForwardRows(t *testing.T) {
	d := emu.New()
	defer d.Close()
	sizes, batch := []int{3, 5, 2}, 6
	net, err := nn.NewMLP(d, sizes, batch, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	vals := [][]float32{make([]float32, 15), make([]float32, 5), make([]float32, 10), make([]float32, 2)}
	for i, v := range vals {
		for j := range v {
			v[j] = float32((i+1)*(j%7)-9) / 8
		}
	}
	if err := net.Upload(net.Params(), vals); err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, batch*3)
	for i := range xs {
		xs[i] = float32(i%5) - 1.75
	}
	x, _ := d.Alloc(device.Float32, batch*3)
	if err := d.Upload(x, xs); err != nil {
		t.Fatal(err)
	}
	full, err := net.Forward(x)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, batch*2)
	if err := d.Download(want, full); err != nil {
		t.Fatal(err)
	}
	acts := make([]device.Buffer, len(sizes))
	for l := 1; l < len(sizes); l++ {
		acts[l], _ = d.Alloc(device.Float32, batch*sizes[l])
	}
	out, err := nn.Forward(d, sizes, net.Params(), acts, x, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, batch*2)
	if err := d.Download(got, out); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		w := want[i]
		if i >= 4*2 {
			w = 0 // never written
		}
		if got[i] != w {
			t.Errorf("out[%d] = %v, want %v", i, got[i], w)
		}
	}
	if _, err := nn.Forward(d, sizes, net.Params(), acts, x, batch+1); !errors.Is(err, device.ErrRange) {
		t.Errorf("Forward over batch+1 rows: %v, want ErrRange", err)
	}
	if _, err := nn.Forward(d, sizes, net.Params(), acts[:2], x, 1); !errors.Is(err, device.ErrArgs) {
		t.Errorf("Forward with one activation buffer short: %v, want ErrArgs", err)
	}
}
