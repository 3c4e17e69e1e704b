package npz

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
)

func sample() []Array {
	return []Array{
		{Name: "b", Shape: []int64{2, 2}, Data: []bool{true, false, false, true}},
		{Name: "empty", Shape: []int64{3, 0, 4}, Data: []float32{}},
		{Name: "f32", Shape: []int64{2, 3}, Data: []float32{1, -2.5, 3e-8, 0, 7, -1e30}},
		{Name: "f64", Shape: []int64{1}, Data: []float64{0.1}},
		{Name: "i32", Shape: []int64{3}, Data: []int32{1, -5, 2147483647}},
		{Name: "i64", Shape: []int64{2, 1}, Data: []int64{-9, 1 << 40}},
		{Name: "scalar", Shape: nil, Data: []int64{7}},
	}
}

// TestRoundTrip: what Write stores, Read returns.
func TestRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.npz")
	if err := Write(p, sample()); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("read back %v, want %v", got, sample())
	}
}

// TestNumPy: numpy.load reads Write's files, and Read reads numpy.savez's.
func TestNumPy(t *testing.T) {
	pyref.Need(t, "numpy")
	dir := t.TempDir()
	p := filepath.Join(dir, "go.npz")
	if err := Write(p, sample()); err != nil {
		t.Fatal(err)
	}
	out := pyref.Run(t, `
import sys, numpy as np
z = np.load(sys.argv[1])
for k in sorted(z.files):
    a = z[k]
    print(k, a.dtype.str, a.shape, a.ravel().tolist())
np.savez(sys.argv[2], f32=np.arange(6, dtype=np.float32).reshape(2, 3) / 4, i64=np.array([[-3], [1 << 50]]),
         i32=np.array([4, -4], dtype=np.int32), b=np.array([True, False, True]), e=np.zeros((2, 0), np.float32))
`, p, filepath.Join(dir, "py.npz"))
	want := `b |b1 (2, 2) [True, False, False, True]
empty <f4 (3, 0, 4) []
f32 <f4 (2, 3) [1.0, -2.5, 2.999999892949745e-08, 0.0, 7.0, -1.0000000150474662e+30]
f64 <f8 (1,) [0.1]
i32 <i4 (3,) [1, -5, 2147483647]
i64 <i8 (2, 1) [-9, 1099511627776]
scalar <i8 () [7]`
	if strings.TrimSpace(out) != want {
		t.Fatalf("numpy read:\n%s\nwant\n%s", out, want)
	}
	got, err := Read(filepath.Join(dir, "py.npz"))
	if err != nil {
		t.Fatal(err)
	}
	exp := []Array{
		{Name: "b", Shape: []int64{3}, Data: []bool{true, false, true}},
		{Name: "e", Shape: []int64{2, 0}, Data: []float32{}},
		{Name: "f32", Shape: []int64{2, 3}, Data: []float32{0, 0.25, 0.5, 0.75, 1, 1.25}},
		{Name: "i32", Shape: []int64{2}, Data: []int32{4, -4}},
		{Name: "i64", Shape: []int64{2, 1}, Data: []int64{-3, 1 << 50}},
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("read numpy's %v, want %v", got, exp)
	}
}

// TestErrors: bad arrays and files fail with an error, not a panic.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, a := range [][]Array{
		{{Name: "x", Shape: []int64{2}, Data: []float32{1}}},
		{{Name: "x", Shape: []int64{1}, Data: []uint8{1}}},
		{{Name: "", Shape: []int64{1}, Data: []float32{1}}},
		{{Name: "x", Shape: []int64{1}, Data: []float32{1}}, {Name: "x", Shape: []int64{1}, Data: []float32{1}}},
	} {
		if err := Write(filepath.Join(dir, "e.npz"), a); err == nil {
			t.Errorf("Write(%v) succeeded", a)
		}
	}
	bad := filepath.Join(dir, "bad.npz")
	if err := os.WriteFile(bad, []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bad); err == nil {
		t.Error("Read of a non-zip succeeded")
	}
	if _, err := decodeNPY([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<u2'}")); err == nil {
		t.Error("decode of a bad header succeeded")
	}
}
