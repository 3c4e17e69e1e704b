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
