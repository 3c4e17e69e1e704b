package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Array is one named n-dimensional array. Data is []float32, []float64,
// []int32, []int64 or []bool with as many values as Shape holds.
type Array struct {
	Name  string
	Shape []int64
	Data  any
}

// Len is the number of values Shape holds.
func (a Array) Len() int64 {
	n := int64(1)
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// descr is the .npy dtype string of a's data, its size in bytes per value
// and its value count.
func descr(data any) (string, int, int, error) {
	switch d := data.(type) {
	case []float32:
		return "<f4", 4, len(d), nil
	case []float64:
		return "<f8", 8, len(d), nil
	case []int32:
		return "<i4", 4, len(d), nil
	case []int64:
		return "<i8", 8, len(d), nil
	case []bool:
		return "|b1", 1, len(d), nil
	}
	return "", 0, 0, fmt.Errorf("npz: unsupported data type %T (float32, float64, int32, int64 or bool slices)", data)
}

// Write stores arrays in an uncompressed .npz file at path (numpy.load reads
// it; names must be unique and non-empty).
func Write(path string, arrays []Array) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	seen := map[string]bool{}
	for _, a := range arrays {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("npz: array name %q is empty or repeated", a.Name)
		}
		seen[a.Name] = true
		b, err := encodeNPY(a)
		if err != nil {
			return fmt.Errorf("npz: array %q: %w", a.Name, err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: a.Name + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// encodeNPY returns a as a version 1.0 .npy file.
func encodeNPY(a Array) ([]byte, error) {
	d, size, n, err := descr(a.Data)
	if err != nil {
		return nil, err
	}
	for _, s := range a.Shape {
		if s < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", a.Shape)
		}
	}
	if int64(n) != a.Len() {
		return nil, fmt.Errorf("%d values do not fill shape %v", n, a.Shape)
	}
	dims := make([]string, len(a.Shape))
	for i, s := range a.Shape {
		dims[i] = strconv.FormatInt(s, 10)
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, shape)
	// Pad magic (6) + version (2) + length (2) + header + '\n' to 64 bytes.
	pad := 63 - (10+len(h))%64
	h += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Grow(size * n)
	switch v := a.Data.(type) {
	case []bool:
		for _, x := range v {
			if x {
				b.WriteByte(1)
			} else {
				b.WriteByte(0)
			}
		}
	default:
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes(), nil
}

// Read loads every array of the .npz file at path, sorted by name.
func Read(path string) ([]Array, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	defer zr.Close()
	var out []Array
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz: %s: %w", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("npz: %s: %w", f.Name, err)
		}
		a, err := decodeNPY(b)
		if err != nil {
			return nil, fmt.Errorf("npz: %s in %s: %w", f.Name, path, err)
		}
		a.Name = name
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

var (
	reDescr   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	reFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

// decodeNPY parses a version 1.x, 2.x or 3.x .npy file.
func decodeNPY(b []byte) (Array, error) {
	var a Array
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return a, fmt.Errorf("not a .npy array")
	}
	var hl, off int
	switch b[6] {
	case 1:
		hl, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return a, fmt.Errorf("truncated header")
		}
		hl, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return a, fmt.Errorf(".npy version %d.%d", b[6], b[7])
	}
	if off+hl > len(b) {
		return a, fmt.Errorf("truncated header")
	}
	h := string(b[off : off+hl])
	body := b[off+hl:]
	m := reDescr.FindStringSubmatch(h)
	f := reFortran.FindStringSubmatch(h)
	s := reShape.FindStringSubmatch(h)
	if m == nil || f == nil || s == nil {
		return a, fmt.Errorf("header %q lacks descr, fortran_order or shape", strings.TrimSpace(h))
	}
	if f[1] == "True" {
		return a, fmt.Errorf("fortran_order arrays are not supported (save a C-order copy)")
	}
	for _, p := range strings.Split(s[1], ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(p, "L"), 10, 64)
		if err != nil || v < 0 {
			return a, fmt.Errorf("shape %q", s[1])
		}
		a.Shape = append(a.Shape, v)
	}
	n := a.Len()
	size := map[string]int64{"<f4": 4, "<f8": 8, "<i4": 4, "<i8": 8, "|b1": 1, "<b1": 1}[m[1]]
	if size == 0 {
		return a, fmt.Errorf("dtype %q (want <f4, <f8, <i4, <i8 or |b1, little-endian)", m[1])
	}
	if int64(len(body)) != n*size {
		return a, fmt.Errorf("%d data bytes, want %d for shape %v of %s", len(body), n*size, a.Shape, m[1])
	}
	switch m[1] {
	case "<f4":
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		}
		a.Data = v
	case "<f8":
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:]))
		}
		a.Data = v
	case "<i4":
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(body[4*i:]))
		}
		a.Data = v
	case "<i8":
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(body[8*i:]))
		}
		a.Data = v
	default: // bool
		v := make([]bool, n)
		for i := range v {
			v[i] = body[i] != 0
		}
		a.Data = v
	}
	return a, nil
}
