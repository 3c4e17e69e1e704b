package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ckpt.bin")
	if err := WriteFile(p, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old content and no temporary file.
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("half of a new chec"))
		return errors.New("disk on fire")
	})
	if err == nil {
		t.Fatal("failure not reported")
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("content after a failed write: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if err := WriteFile(p, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "second" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", b, st.Mode())
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), nil, 0o644); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
