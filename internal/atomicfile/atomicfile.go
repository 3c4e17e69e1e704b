package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write atomically replaces path with what fill writes. If fill fails,
// path is untouched and the temporary file is removed.
func Write(path string, perm os.FileMode, fill func(w io.Writer) error) error {
	return WritePath(path, perm, func(tmp string) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if err := fill(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// WritePath is Write for writers that need a file name (e.g. HDF5): fill
// creates the file at tmp, a fresh path in path's directory; the file is
// then synced and renamed over path. If fill fails, path is untouched and
// tmp is removed.
func WritePath(path string, perm os.FileMode, fill func(tmp string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = fill(tmp); err != nil {
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	return commit(tmp, path, perm)
}

// commit syncs tmp, sets its mode and renames it over path.
func commit(tmp, path string, perm os.FileMode) error {
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("atomicfile: syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomicfile: closing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil { // persist the rename
		d.Sync()
		d.Close()
	}
	return nil
}
