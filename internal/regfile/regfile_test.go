package regfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(ok, 5); err != nil || string(b) != "12345" {
		t.Fatalf("Read at the limit: %q, %v", b, err)
	}
	if _, err := Read(ok, 4); err == nil || !strings.Contains(err.Error(), "more than the limit of 4") {
		t.Fatalf("Read past the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := Read(fifo, 5); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Read of a FIFO: %v", err)
	}
	if _, err := Read(os.DevNull, 5); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Read of %s: %v", os.DevNull, err)
	}
}
