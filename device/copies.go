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

// AdamState is one network's Adam state on the host as models.Adam holds
// it: the first and second moments in the trainer's tensor order and the
// steps taken. The device trainers (admdev, ensdev, sacdev's BC) load and
// store it with SetOptim and OptimInto.
type AdamState struct {
	M, V [][]float32
	T    int
}

// DownloadAdam fills s.M and s.V (tensors of the buffers' sizes) from the
// moment buffers m and v; it waits for the device and leaves s.T alone.
func DownloadAdam(d Device, s *AdamState, m, v []Buffer) error {
	if err := DownloadAll(d, s.M, m); err != nil {
		return fmt.Errorf("adam m: %w", err)
	}
	if err := DownloadAll(d, s.V, v); err != nil {
		return fmt.Errorf("adam v: %w", err)
	}
	return nil
}

// UploadAdam copies s's moments into the buffers m and v after checking
// that s.T is not negative.
func UploadAdam(d Device, m, v []Buffer, s AdamState) error {
	if s.T < 0 {
		return fmt.Errorf("adam state: %d steps", s.T)
	}
	if err := UploadAll(d, m, s.M); err != nil {
		return fmt.Errorf("adam m: %w", err)
	}
	if err := UploadAll(d, v, s.V); err != nil {
		return fmt.Errorf("adam v: %w", err)
	}
	return nil
}
