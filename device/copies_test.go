package device_test

import (
	"slices"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
)

// TestUploadAllDownloadAll: tensors go up and come back equal; a count
// mismatch in any tensor is an error that copies nothing.
func TestUploadAllDownloadAll(t *testing.T) {
	d := emu.New()
	defer d.Close()
	var bufs []device.Buffer
	for _, n := range []int{3, 2} {
		b, err := d.Alloc(device.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free(b)
		bufs = append(bufs, b)
	}
	want := [][]float32{{1, 2, 3}, {4, 5}}
	if err := device.UploadAll(d, bufs, want); err != nil {
		t.Fatal(err)
	}
	if err := device.UploadAll(d, bufs, [][]float32{{7, 7, 7}, {7}}); err == nil {
		t.Fatal("UploadAll took a tensor of 1 value for a buffer of 2")
	}
	if err := device.UploadAll(d, bufs, want[:1]); err == nil {
		t.Fatal("UploadAll took 1 tensor for 2 buffers")
	}
	got := [][]float32{make([]float32, 3), make([]float32, 2)}
	if err := device.DownloadAll(d, got, bufs); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("tensor %d: got %v, want %v (a failed upload must copy nothing)", i, got[i], want[i])
		}
	}
	if err := device.DownloadAll(d, [][]float32{make([]float32, 3), make([]float32, 3)}, bufs); err == nil {
		t.Fatal("DownloadAll filled a tensor of 3 values from a buffer of 2")
	}
}
