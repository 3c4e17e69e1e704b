package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Version is the protocol version this package speaks.
const Version = 1

// Frame types (docs/remote-envs.md).
const (
	msgHello = 0x01 // client: u32 version
	msgReset = 0x02 // client: u8 has_seed, i64 seed
	msgStep  = 0x03 // client: u32 n, f64[n] action
	msgClose = 0x04 // client: nothing; the server closes the connection
	msgSpec  = 0x81 // server: u32 version, u32 obs_dim, u32 act_dim, u32 max_episode_steps, f64[act] low, f64[act] high, u32 len, name
	msgObs   = 0x82 // server: u32 n, f64[n] observation
	msgStepR = 0x83 // server: f64 reward, u8 flags (1 terminated, 2 truncated), u32 n, f64[n] observation
	msgError = 0xff // server: a UTF-8 message

	// Batches of env copies (optional for servers: one without them
	// answers these with an error frame, as any unknown request).
	msgCopies     = 0x05 // client: u32 n, the copies wanted
	msgResetBatch = 0x06 // client: u32 n, n × (u32 copy, u8 has_seed, i64 seed)
	msgStepBatch  = 0x07 // client: u32 n, u32 act_dim, u32[n] copy, f64[n·act_dim] actions
	msgCopiesR    = 0x85 // server: u32 k, the copies the connection now holds (1 <= k <= n)
	msgObsBatch   = 0x86 // server: u32 n, u32 obs_dim, f64[n·obs_dim] observations
	msgStepBatchR = 0x87 // server: u32 n, u32 obs_dim, n × (f64 reward, u8 flags), f64[n·obs_dim] observations
)

// MaxCopies bounds the env copies one connection may ask for.
const MaxCopies = 4096

// maxFrame bounds a frame's length (16 MiB): a larger length is a
// protocol error, not an allocation.
const maxFrame = 1 << 24

// writeFrame writes one frame: u32 length of what follows, the type, the
// payload.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	b := make([]byte, 5+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(1+len(payload)))
	b[4] = typ
	copy(b[5:], payload)
	_, err := w.Write(b)
	return err
}

// readFrame reads one frame and returns its type and payload.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n == 0 || n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes (want 1 to %d): not the admpo environment protocol", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return b[0], b[1:], nil
}

// enc appends little-endian values to a payload.
type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) i64(v int64)  { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) f64(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}
func (e *enc) vec(v []float64) {
	e.u32(uint32(len(v)))
	e.f64s(v)
}
func (e *enc) f64s(v []float64) {
	for _, x := range v {
		e.f64(x)
	}
}

// dec reads little-endian values from a payload; the first short read
// sets err and later reads return zeros.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("frame ends %d bytes early", n-len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *dec) i64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (d *dec) f64() float64 {
	if b := d.take(8); b != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (d *dec) f64s(n int) []float64 {
	if n < 0 || n > maxFrame/8 {
		d.err = fmt.Errorf("vector of %d values", n)
		return nil
	}
	b := d.take(8 * n)
	if b == nil {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func (d *dec) vec() []float64 { return d.f64s(int(d.u32())) }

// done fails when the payload was short or has bytes left over.
func (d *dec) done() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes left over in the frame", len(d.b))
	}
	return d.err
}
