package regfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads the regular file path of at most limit bytes. It opens
// without blocking and checks the opened file (type and size) before
// reading, so a FIFO, a device or an oversized file given where a file
// belongs is refused at once instead of hanging or being read into memory.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (mode %v)", path, st.Mode())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the limit of %d", path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew beyond %d bytes while being read", path, limit)
	}
	return b, nil
}
