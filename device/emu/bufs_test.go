package emu

import (
	"testing"

	"github.com/admpo/admpo/device"
)

// testBufs puts the roll-out kernels' test data on d, failing t on any
// error.
type testBufs struct {
	t testing.TB
	d device.Device
}

func (b testBufs) must(err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
}

// up returns a float32 buffer holding x.
func (b testBufs) up(x []float32) device.Buffer {
	b.t.Helper()
	buf, err := b.d.Alloc(device.Float32, len(x))
	b.must(err)
	b.must(b.d.Upload(buf, x))
	return buf
}

// upInt returns an int32 buffer holding x.
func (b testBufs) upInt(x []int32) device.Buffer {
	b.t.Helper()
	buf, err := b.d.Alloc(device.Int32, len(x))
	b.must(err)
	b.must(b.d.UploadInt32(buf, x))
	return buf
}
