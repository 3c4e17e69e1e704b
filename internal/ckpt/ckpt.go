package ckpt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/admpo/admpo/internal/atomicfile"
)

// Version is the container format version written by this package.
const Version = 1

var (
	magic    = []byte("ADMPOCKP")
	endMagic = []byte("ADMPOEND")
)

const (
	kindF32   = 1
	kindBytes = 2
)

// ErrCorrupt is wrapped by every error about a damaged file.
var ErrCorrupt = errors.New("ckpt: corrupt checkpoint")

type section struct {
	name string
	kind uint8
	f32  []float32
	raw  []byte
}

// File is an ordered set of named sections.
type File struct {
	secs  []section
	index map[string]int
}

// New returns an empty File.
func New() *File { return &File{index: map[string]int{}} }

func (f *File) add(s section) {
	if i, ok := f.index[s.name]; ok {
		f.secs[i] = s
		return
	}
	f.index[s.name] = len(f.secs)
	f.secs = append(f.secs, s)
}

// PutF32 stores a float32 tensor under name (replacing an earlier one).
func (f *File) PutF32(name string, v []float32) { f.add(section{name: name, kind: kindF32, f32: v}) }

// PutBytes stores raw bytes under name.
func (f *File) PutBytes(name string, b []byte) { f.add(section{name: name, kind: kindBytes, raw: b}) }

// Names lists the sections in order.
func (f *File) Names() []string {
	n := make([]string, len(f.secs))
	for i, s := range f.secs {
		n[i] = s.name
	}
	return n
}

// F32 returns the tensor called name; want >= 0 also checks its length.
func (f *File) F32(name string, want int) ([]float32, error) {
	i, ok := f.index[name]
	if !ok || f.secs[i].kind != kindF32 {
		return nil, fmt.Errorf("ckpt: no tensor %q in the checkpoint", name)
	}
	v := f.secs[i].f32
	if want >= 0 && len(v) != want {
		return nil, fmt.Errorf("ckpt: tensor %q has %d values, want %d (a checkpoint of another architecture?)", name, len(v), want)
	}
	return v, nil
}

// CopyF32 copies the tensor called name into dst, which must have its length.
func (f *File) CopyF32(name string, dst []float32) error {
	v, err := f.F32(name, len(dst))
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

// Bytes returns the byte section called name.
func (f *File) Bytes(name string) ([]byte, error) {
	i, ok := f.index[name]
	if !ok || f.secs[i].kind != kindBytes {
		return nil, fmt.Errorf("ckpt: no section %q in the checkpoint", name)
	}
	return f.secs[i].raw, nil
}

// Encode serialises the file.
func (f *File) Encode() []byte {
	var b bytes.Buffer
	b.Write(magic)
	le := binary.LittleEndian
	b.Write(le.AppendUint32(nil, Version))
	b.Write(le.AppendUint32(nil, uint32(len(f.secs))))
	for _, s := range f.secs {
		b.WriteByte(s.kind)
		b.Write(le.AppendUint32(nil, uint32(len(s.name))))
		b.WriteString(s.name)
		switch s.kind {
		case kindF32:
			b.Write(le.AppendUint64(nil, uint64(len(s.f32))))
			buf := make([]byte, 4*len(s.f32))
			for i, x := range s.f32 {
				le.PutUint32(buf[4*i:], math.Float32bits(x))
			}
			b.Write(buf)
		case kindBytes:
			b.Write(le.AppendUint64(nil, uint64(len(s.raw))))
			b.Write(s.raw)
		}
	}
	b.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(b.Bytes())))
	b.Write(endMagic)
	return b.Bytes()
}

// Save writes the file to path atomically.
func (f *File) Save(path string) error {
	return atomicfile.WriteFile(path, f.Encode(), 0o644)
}

// Decode parses a serialised file, verifying its framing and checksum.
func Decode(data []byte) (*File, error) {
	n := len(data)
	if n < len(magic)+8+4+len(endMagic) || !bytes.Equal(data[:len(magic)], magic) {
		return nil, fmt.Errorf("%w: not an admpo checkpoint (bad magic or too short: %d bytes)", ErrCorrupt, n)
	}
	if !bytes.Equal(data[n-len(endMagic):], endMagic) {
		return nil, fmt.Errorf("%w: truncated (no end marker; %d bytes)", ErrCorrupt, n)
	}
	le := binary.LittleEndian
	body := data[:n-len(endMagic)-4]
	if got, want := crc32.ChecksumIEEE(body), le.Uint32(data[n-len(endMagic)-4:]); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (%08x, stored %08x)", ErrCorrupt, got, want)
	}
	r := bytes.NewReader(body[len(magic):])
	var ver, count uint32
	if err := binary.Read(r, le, &ver); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if ver != Version {
		return nil, fmt.Errorf("ckpt: checkpoint format version %d, this admpo reads version %d", ver, Version)
	}
	if err := binary.Read(r, le, &count); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	f := New()
	for i := uint32(0); i < count; i++ {
		kind, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrCorrupt, i, err)
		}
		var nl uint32
		if err := binary.Read(r, le, &nl); err != nil || int(nl) > r.Len() {
			return nil, fmt.Errorf("%w: section %d name", ErrCorrupt, i)
		}
		name := make([]byte, nl)
		io.ReadFull(r, name)
		var cnt uint64
		if err := binary.Read(r, le, &cnt); err != nil {
			return nil, fmt.Errorf("%w: section %q size", ErrCorrupt, name)
		}
		switch kind {
		case kindF32:
			if cnt > uint64(r.Len())/4 {
				return nil, fmt.Errorf("%w: section %q claims %d values", ErrCorrupt, name, cnt)
			}
			buf := make([]byte, 4*cnt)
			io.ReadFull(r, buf)
			v := make([]float32, cnt)
			for j := range v {
				v[j] = math.Float32frombits(le.Uint32(buf[4*j:]))
			}
			f.PutF32(string(name), v)
		case kindBytes:
			if cnt > uint64(r.Len()) {
				return nil, fmt.Errorf("%w: section %q claims %d bytes", ErrCorrupt, name, cnt)
			}
			buf := make([]byte, cnt)
			io.ReadFull(r, buf)
			f.PutBytes(string(name), buf)
		default:
			return nil, fmt.Errorf("%w: section %q has unknown kind %d", ErrCorrupt, name, kind)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d stray bytes after the sections", ErrCorrupt, r.Len())
	}
	return f, nil
}

// Load reads and verifies a checkpoint file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ckpt: %w", err)
	}
	f, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
