package tbevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/admpo/admpo/internal/atomicfile"
)

// FileVersion is the file_version string of an event file's first event.
const FileVersion = "brain.Event:2"

// Prefix starts the name of every event file (TensorBoard's convention).
const Prefix = "events.out.tfevents."

// Field numbers of tensorflow/core/util/event.proto and summary.proto.
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary
	summaryValue     = 1 // repeated Summary.Value
	valueTag         = 1 // string
	valueSimple      = 2 // float
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's masked CRC-32C of b.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// Scalar is one tagged value of a Summary.
type Scalar struct {
	Tag   string
	Value float32
}

// Event is a decoded Event: the fields this package writes.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	Scalars     []Scalar
}

// appendEvent appends the Event protobuf of e to b.
func appendEvent(b []byte, e Event) []byte {
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.WallTime))
	if e.Step != 0 {
		b = protowire.AppendTag(b, eventStep, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(e.Step))
	}
	if e.FileVersion != "" {
		b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
		b = protowire.AppendString(b, e.FileVersion)
	}
	if len(e.Scalars) > 0 {
		var s []byte
		for _, v := range e.Scalars {
			var val []byte
			val = protowire.AppendTag(val, valueTag, protowire.BytesType)
			val = protowire.AppendString(val, v.Tag)
			val = protowire.AppendTag(val, valueSimple, protowire.Fixed32Type)
			val = protowire.AppendFixed32(val, math.Float32bits(v.Value))
			s = protowire.AppendTag(s, summaryValue, protowire.BytesType)
			s = protowire.AppendBytes(s, val)
		}
		b = protowire.AppendTag(b, eventSummary, protowire.BytesType)
		b = protowire.AppendBytes(b, s)
	}
	return b
}

// appendRecord appends data framed as one TFRecord to b.
func appendRecord(b, data []byte) []byte {
	var h [12]byte
	binary.LittleEndian.PutUint64(h[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(h[8:], MaskedCRC(h[:8]))
	b = append(append(b, h[:]...), data...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC(data))
}

// Writer appends scalar events to one event file.
type Writer struct {
	f    *os.File
	path string
	buf  []byte
}

// Create starts a new event file in dir (created if missing), named
// events.out.tfevents.UNIX.HOST.PID.N so that every process start gets its
// own file sorting after the earlier ones, and writes its file_version
// event at step 0.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tbevent: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" || strings.ContainsAny(host, "/\\") {
		host = "localhost"
	}
	now := time.Now()
	var f *os.File
	var path string
	for n := 0; ; n++ {
		path = filepath.Join(dir, fmt.Sprintf("%s%010d.%s.%d.%d", Prefix, now.Unix(), host, os.Getpid(), n))
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || n > 1000 {
			return nil, fmt.Errorf("tbevent: %w", err)
		}
	}
	w := &Writer{f: f, path: path}
	if err := w.write(Event{WallTime: unixSeconds(now), FileVersion: FileVersion}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Scalars writes one event at step holding the given values, stamped with
// the current time, in one write call.
func (w *Writer) Scalars(step int64, values []Scalar) error {
	return w.write(Event{WallTime: unixSeconds(time.Now()), Step: step, Scalars: values})
}

func (w *Writer) write(e Event) error {
	if w.f == nil {
		return errors.New("tbevent: write to a closed writer")
	}
	w.buf = appendEvent(w.buf[:0], e)
	n := len(w.buf)
	w.buf = appendRecord(w.buf, w.buf[:n])
	if _, err := w.f.Write(w.buf[n:]); err != nil {
		return fmt.Errorf("tbevent: %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Files lists the event files in dir in name order (TensorBoard's order);
// none for a missing dir.
func Files(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("tbevent: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// record is one framed record's data.
type record struct{ data []byte }

// readRecords splits an event file into its records, checking the framing
// and both CRCs of each. A truncated last record (a writer killed mid-write)
// is reported with the records before it, and complete is false.
func readRecords(b []byte) (recs []record, complete bool, err error) {
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			return recs, false, nil
		}
		h := b[off : off+12]
		if MaskedCRC(h[:8]) != binary.LittleEndian.Uint32(h[8:]) {
			return nil, false, fmt.Errorf("record at byte %d: length CRC mismatch", off)
		}
		n := binary.LittleEndian.Uint64(h[:8])
		if n > uint64(len(b)-off-12) || uint64(len(b)-off-12)-n < 4 {
			return recs, false, nil
		}
		data := b[off+12 : off+12+int(n)]
		if MaskedCRC(data) != binary.LittleEndian.Uint32(b[off+12+int(n):]) {
			return nil, false, fmt.Errorf("record at byte %d: data CRC mismatch", off)
		}
		recs = append(recs, record{data: data})
		off += 16 + int(n)
	}
	return recs, true, nil
}

// decodeEvent decodes the fields of an Event that this package writes,
// skipping any other field.
func decodeEvent(b []byte) (Event, error) {
	var e Event
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			e.WallTime = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			e.Step = int64(x)
		case num == eventFileVersion && typ == protowire.BytesType:
			e.FileVersion = string(v)
		case num == eventSummary && typ == protowire.BytesType:
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				var s Scalar
				err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
					switch {
					case num == valueTag && typ == protowire.BytesType:
						s.Tag = string(v)
					case num == valueSimple && typ == protowire.Fixed32Type:
						s.Value = math.Float32frombits(uint32(x))
					}
					return nil
				})
				e.Scalars = append(e.Scalars, s)
				return err
			})
		}
		return nil
	})
	return e, err
}

// eachField calls f with every field of the message b: its number, wire
// type, bytes (length-delimited fields) and integer value (the others).
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte, uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads the events of an event file, checking its framing and
// CRCs; a truncated last record is left out.
func ReadFile(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tbevent: %w", err)
	}
	recs, _, err := readRecords(b)
	if err != nil {
		return nil, fmt.Errorf("tbevent: %s: %w", path, err)
	}
	out := make([]Event, len(recs))
	for i, r := range recs {
		if out[i], err = decodeEvent(r.data); err != nil {
			return nil, fmt.Errorf("tbevent: %s: event %d: %w", path, i, err)
		}
	}
	return out, nil
}

// Trim rewrites the event file at path atomically without the events
// after step keepUpTo (and without a truncated last record), for a run
// resumed at that step; the file_version event is kept. A file with
// nothing to drop is left untouched. It returns the number of events
// dropped.
func Trim(path string, keepUpTo int64) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("tbevent: %w", err)
	}
	recs, complete, err := readRecords(b)
	if err != nil {
		return 0, fmt.Errorf("tbevent: %s: %w", path, err)
	}
	var kept []byte
	dropped := 0
	for i, r := range recs {
		e, err := decodeEvent(r.data)
		if err != nil {
			return 0, fmt.Errorf("tbevent: %s: event %d: %w", path, i, err)
		}
		if e.Step > keepUpTo && e.FileVersion == "" {
			dropped++
			continue
		}
		kept = appendRecord(kept, r.data)
	}
	if dropped == 0 && complete {
		return 0, nil
	}
	if err := atomicfile.WriteFile(path, kept, 0o644); err != nil {
		return 0, fmt.Errorf("tbevent: %w", err)
	}
	return dropped, nil
}

// TrimDir trims every event file in dir to the steps up to keepUpTo (see
// Trim) and returns the number of events dropped.
func TrimDir(dir string, keepUpTo int64) (int, error) {
	files, err := Files(dir)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, p := range files {
		n, err := Trim(p, keepUpTo)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// compile-time check that Writer can be used as a closer.
var _ io.Closer = (*Writer)(nil)
