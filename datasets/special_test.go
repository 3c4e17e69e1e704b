package datasets

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesRefused checks that a FIFO or a device given as a data
// file (a D4RL file, a NeoRL archive, a Minari directory's metadata.json
// or main_data.hdf5) is refused at once, naming it, instead of blocking
// forever on the open.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("cannot make a FIFO: %v", err)
		}
		return p
	}
	d4rl := fifo(filepath.Join(dir, "d4rl.hdf5"))
	npz := fifo(filepath.Join(dir, "neorl.npz"))
	metaFIFO := filepath.Join(dir, "meta-fifo")
	fifo(filepath.Join(metaFIFO, "data", MinariMetaFile))
	dataFIFO := filepath.Join(dir, "data-fifo")
	if err := os.MkdirAll(filepath.Join(dataFIFO, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataFIFO, "data", MinariMetaFile), []byte(`{"total_episodes": 1, "data_format": "hdf5"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo(filepath.Join(dataFIFO, "data", MinariDataFile))

	for _, c := range []struct {
		name, blocker string // blocker: the FIFO a hung reader waits on
		read          func() error
		parts         []string
	}{
		{"D4RL FIFO", d4rl, func() error { _, err := ReadD4RL(d4rl); return err }, []string{d4rl, "is not a regular file"}},
		{"Read FIFO", d4rl, func() error { _, err := Read(d4rl); return err }, []string{d4rl, "is not a regular file"}},
		{"D4RL device", "", func() error { _, err := ReadD4RL(os.DevNull); return err }, []string{os.DevNull, "is not a regular file"}},
		{"NeoRL FIFO", npz, func() error { _, err := ReadNeoRL(npz); return err }, []string{npz, "is not a regular file"}},
		{"Minari metadata FIFO", filepath.Join(metaFIFO, "data", MinariMetaFile), func() error { _, err := Read(metaFIFO); return err },
			[]string{MinariMetaFile, "is not a regular file"}},
		{"Minari data FIFO", filepath.Join(dataFIFO, "data", MinariDataFile), func() error { _, err := Read(dataFIFO); return err },
			[]string{MinariDataFile, "is not a regular file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- c.read() }()
			select {
			case err := <-done:
				wantErr(t, err, c.parts...)
			case <-time.After(10 * time.Second):
				if c.blocker != "" { // a writer that closes at once releases the reader
					if f, err := os.OpenFile(c.blocker, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
				t.Fatalf("still blocked after 10 s: want an error naming %q", c.parts)
			}
		})
	}
}
