package device_test

import (
	"slices"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
)

// TestReplay: without graphs every step queues directly; with them the
// first step runs directly, the second is recorded and launched, and later
// ones only launch the graph, which still does the work (x += 1 each step).
func TestReplay(t *testing.T) {
	d := emu.New()
	defer d.Close()
	x, err := d.Alloc(device.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, graph := range []bool{false, true} {
		if err := d.Upload(x, []float32{0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		var r device.Replay
		queued := 0
		one, err := d.Alloc(device.Float32, 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Upload(one, []float32{1, 1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		queue := func() error {
			queued++
			return d.Launch("axpy", 4, float32(1), one, x) // x += 1
		}
		for range 5 {
			if err := r.Run(d, graph, queue); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, 4)
		if err := d.Download(got, x); err != nil {
			t.Fatal(err)
		}
		wantQueued := 5
		if graph {
			wantQueued = 2 // directly once, recorded once
		}
		if queued != wantQueued || !slices.Equal(got, []float32{5, 5, 5, 5}) || r.Recorded() != graph {
			t.Errorf("graph %v: queued %d times (want %d), x %v (want 5s), recorded %v", graph, queued, wantQueued, got, r.Recorded())
		}
		if err := r.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if k := device.AdamK(1, 1e-3); k[4] != float32(1e-3/(1-0.9)) || k[5] != float32(0.0316227766016838) {
		t.Errorf("AdamK(1, 1e-3) = %v: step and bc2_sqrt want %g, %g", k, float32(1e-3/(1-0.9)), float32(0.0316227766016838))
	}
}
