package ckpt

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/internal/bitexact"
)

func sample() *File {
	f := New()
	f.PutF32("actor/w0", []float32{1, -2.5, float32(math.Inf(1)), 3e-38})
	f.PutBytes("config", []byte(`{"env":"hopper"}`))
	f.PutF32("empty", nil)
	return f
}

func TestRoundTripIsExact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.ckpt")
	if err := sample().Save(p); err != nil {
		t.Fatal(err)
	}
	g, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := g.F32("actor/w0", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, -2.5, float32(math.Inf(1)), 3e-38}
	if i := bitexact.Diff(w, want); i >= 0 {
		t.Fatalf("value %d: %v, want %v", i, w[i], want[i])
	}
	if b, _ := g.Bytes("config"); string(b) != `{"env":"hopper"}` {
		t.Fatalf("bytes: %q", b)
	}
	if names := g.Names(); len(names) != 3 || names[0] != "actor/w0" || names[2] != "empty" {
		t.Fatalf("names %v", names)
	}
	if _, err := g.F32("actor/w0", 5); err == nil {
		t.Error("wrong length accepted")
	}
	if _, err := g.F32("missing", -1); err == nil {
		t.Error("missing tensor accepted")
	}
}

func TestDamagedFilesAreRefused(t *testing.T) {
	good := sample().Encode()
	for cut := 0; cut < len(good); cut += 7 {
		if _, err := Decode(good[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d/%d: err %v", cut, len(good), err)
		}
	}
	for i := 0; i < len(good); i += 5 {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x10
		if _, err := Decode(bad); err == nil {
			t.Fatalf("flipped bit at byte %d accepted", i)
		}
	}
	// Another format version (with a valid checksum) is refused by name.
	f := sample().Encode()
	binary.LittleEndian.PutUint32(f[8:], 99)
	body := f[:len(f)-12]
	binary.LittleEndian.PutUint32(f[len(f)-12:], crcOf(body))
	if _, err := Decode(f); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("version 99: %v", err)
	}
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("hello"), 0o644)
	if _, err := Load(p); err == nil {
		t.Error("junk file accepted")
	}
}
