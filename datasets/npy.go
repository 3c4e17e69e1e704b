package datasets

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
)

// npzFile is an open .npz archive whose array names are known without the
// ".npy" suffix that the archive's members carry.
type npzFile struct {
	r     *npz.Reader
	names map[string]string // name without .npy -> member name
}

func openNpz(path string) (*npzFile, error) {
	r, err := npz.Open(path)
	if err != nil {
		return nil, fmt.Errorf("not a readable .npz archive (corrupt or truncated?): %w", err)
	}
	f := &npzFile{r: r, names: map[string]string{}}
	for _, k := range r.Keys() {
		f.names[strings.TrimSuffix(k, ".npy")] = k
	}
	return f, nil
}

func (f *npzFile) Close() error { return f.r.Close() }

// npyData is one array's decoded header and raw little- or big-endian bytes.
type npyData struct {
	name    string
	shape   []int
	kind    byte // 'f', 'i', 'u' or 'b'
	size    int  // bytes per element
	order   binary.ByteOrder
	fortran bool
	raw     []byte
}

// read loads the named array's header and bytes, checking that the data is
// as long as the header promises.
func (f *npzFile) read(name string) (*npyData, error) {
	member, ok := f.names[name]
	if !ok {
		return nil, fmt.Errorf("missing array %q", name)
	}
	rc, err := f.r.Open(member)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rc.Close()
	hdr, err := readNpyHeader(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: bad .npy header: %w", name, err)
	}
	d := &npyData{name: name, shape: hdr.Descr.Shape, fortran: hdr.Descr.Fortran}
	if err := d.parseDescr(hdr.Descr.Type); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.raw, err = io.ReadAll(rc); err != nil {
		return nil, fmt.Errorf("%s: reading data (corrupt archive?): %w", name, err)
	}
	n := 1
	for _, s := range d.shape {
		n *= s
	}
	if want := n * d.size; len(d.raw) != want {
		return nil, fmt.Errorf("%s: data is %d bytes, its header (shape %v, dtype %s) promises %d: truncated or corrupt", name, len(d.raw), d.shape, hdr.Descr.Type, want)
	}
	return d, nil
}

// readNpyHeader parses a .npy header, turning a panic inside npyio on a
// malformed header into an error.
func readNpyHeader(r io.Reader) (h npy.Header, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed header: %v", p)
		}
	}()
	rd, err := npy.NewReader(r)
	if err != nil {
		return npy.Header{}, err
	}
	return rd.Header, nil
}

// parseDescr reads a numpy dtype string such as "<f4", "|b1" or ">i8".
func (d *npyData) parseDescr(t string) error {
	if len(t) < 3 {
		return fmt.Errorf("unsupported dtype %q", t)
	}
	switch t[0] {
	case '<', '|', '=':
		d.order = binary.LittleEndian
	case '>':
		d.order = binary.BigEndian
	default:
		return fmt.Errorf("unsupported dtype %q", t)
	}
	d.kind = t[1]
	size, err := strconv.Atoi(t[2:])
	if err != nil {
		return fmt.Errorf("unsupported dtype %q", t)
	}
	d.size = size
	ok := false
	switch d.kind {
	case 'f':
		ok = size == 4 || size == 8
	case 'i', 'u':
		ok = size == 1 || size == 2 || size == 4 || size == 8
	case 'b':
		ok = size == 1
	}
	if !ok {
		return fmt.Errorf("unsupported dtype %q (want float, integer or bool)", t)
	}
	return nil
}

// rowsCols returns the array as a matrix: (N,) is N x 1, (N, k) is N x k.
func (d *npyData) rowsCols() (int, int, error) {
	switch len(d.shape) {
	case 1:
		return d.shape[0], 1, nil
	case 2:
		return d.shape[0], d.shape[1], nil
	}
	return 0, 0, fmt.Errorf("%s has shape %v, want 1 or 2 dimensions", d.name, d.shape)
}

// values decodes the array to T in C (row-major) order.
func values[T float32 | float64](d *npyData) []T {
	n := len(d.raw) / d.size
	out := make([]T, n)
	o := d.order
	for i := range out {
		b := d.raw[i*d.size : (i+1)*d.size]
		var v T
		switch {
		case d.kind == 'f' && d.size == 4:
			v = T(math.Float32frombits(o.Uint32(b)))
		case d.kind == 'f':
			v = T(math.Float64frombits(o.Uint64(b)))
		case d.kind == 'b', d.kind == 'u' && d.size == 1:
			v = T(b[0])
		case d.kind == 'u' && d.size == 2:
			v = T(o.Uint16(b))
		case d.kind == 'u' && d.size == 4:
			v = T(o.Uint32(b))
		case d.kind == 'u':
			v = T(o.Uint64(b))
		case d.size == 1:
			v = T(int8(b[0]))
		case d.size == 2:
			v = T(int16(o.Uint16(b)))
		case d.size == 4:
			v = T(int32(o.Uint32(b)))
		default:
			v = T(int64(o.Uint64(b)))
		}
		out[i] = v
	}
	if d.fortran && len(d.shape) == 2 {
		r, c := d.shape[0], d.shape[1]
		t := make([]T, n)
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				t[i*c+j] = out[j*r+i]
			}
		}
		out = t
	}
	return out
}
