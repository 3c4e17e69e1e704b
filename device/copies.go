package device

import "fmt"

// UploadAll copies host tensors into bufs, one each, after checking every
// count (so a size mismatch copies nothing).
func UploadAll(d Device, bufs []Buffer, src [][]float32) error {
	if len(src) != len(bufs) {
		return fmt.Errorf("%d tensors, want %d", len(src), len(bufs))
	}
	for i, b := range bufs {
		if len(src[i]) != b.Len() {
			return fmt.Errorf("tensor %d has %d values, want %d", i, len(src[i]), b.Len())
		}
	}
	for i, b := range bufs {
		if err := d.Upload(b, src[i]); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	return nil
}

// DownloadAll copies bufs into host tensors of the same counts; it waits
// for the device.
func DownloadAll(d Device, dst [][]float32, bufs []Buffer) error {
	if len(dst) != len(bufs) {
		return fmt.Errorf("%d tensors, want %d", len(dst), len(bufs))
	}
	for i, b := range bufs {
		if len(dst[i]) != b.Len() {
			return fmt.Errorf("tensor %d has %d values, want %d", i, len(dst[i]), b.Len())
		}
		if err := d.Download(dst[i], b); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	return nil
}
