package devicetest

import (
	"slices"
	"testing"

	"github.com/admpo/admpo/device"
)

// testCopies checks uploads and downloads of both element types, whole and
// partial (a partial copy touches only the start), zeroed allocation and
// empty buffers.
func testCopies(t *testing.T, d device.Device) {
	h := h{t, d}
	f := h.alloc(device.Float32, 5)
	if got := h.down(f); !slices.Equal(got, make([]float32, 5)) {
		t.Errorf("new float32 buffer = %v, want zeros", got)
	}
	if err := d.Upload(f, []float32{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(f, []float32{-1, -2}); err != nil {
		t.Fatal(err)
	}
	if got := h.down(f); !slices.Equal(got, []float32{-1, -2, 3, 4, 5}) {
		t.Errorf("after a partial upload: %v", got)
	}
	part := make([]float32, 3)
	if err := d.Download(part, f); err != nil || !slices.Equal(part, []float32{-1, -2, 3}) {
		t.Errorf("partial download: %v, %v", part, err)
	}

	i := h.alloc(device.Int32, 4)
	got := make([]int32, 4)
	if err := d.DownloadInt32(got, i); err != nil || !slices.Equal(got, make([]int32, 4)) {
		t.Errorf("new int32 buffer = %v, %v; want zeros", got, err)
	}
	want := []int32{7, -3, 1 << 30, -1 << 31}
	if err := d.UploadInt32(i, want); err != nil {
		t.Fatal(err)
	}
	if err := d.DownloadInt32(got, i); err != nil || !slices.Equal(got, want) {
		t.Errorf("int32 round trip: %v, %v; want %v", got, err, want)
	}
	if err := d.DownloadInt32(make([]int32, 1), f); err == nil {
		t.Error("DownloadInt32 from a float32 buffer succeeded")
	}
	if err := d.DownloadInt32(make([]int32, 5), i); err == nil {
		t.Error("DownloadInt32 of 5 from a buffer of 4 succeeded")
	}

	e := h.alloc(device.Float32, 0)
	if e.Len() != 0 || e.Type() != device.Float32 {
		t.Errorf("empty buffer: Len %d, Type %v", e.Len(), e.Type())
	}
	if err := d.Upload(e, nil); err != nil {
		t.Errorf("empty upload: %v", err)
	}
	if err := d.Download(nil, e); err != nil {
		t.Errorf("empty download: %v", err)
	}
	if err := d.Free(e); err != nil {
		t.Errorf("free of an empty buffer: %v", err)
	}
	if err := d.Download(nil, e); err == nil {
		t.Error("download from a freed empty buffer succeeded")
	}
}
