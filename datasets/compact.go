package datasets

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// compactMagic starts a compact data set file (version 1).
const compactMagic = "ADMPOCD1"

// WriteCompact writes the transitions of d (no infos, no metadata)
// gzip-compressed and about half the size of D4RL's layout: observations,
// actions, rewards and the terminal/timeout flags, and next_observations
// only for rows that end an episode, since inside an episode row i's next
// observation is row i+1's observation (checked: a data set where it is not
// is refused). Float arrays are stored byte-plane by byte-plane (HDF5's
// shuffle filter), which gzip compresses better. The output depends on d
// alone.
func WriteCompact(w io.Writer, d *Dataset) error {
	if err := d.Validate(d.ObsDim, d.ActDim); err != nil {
		return err
	}
	od := d.ObsDim
	var ends []float32
	flags := make([]byte, d.N)
	for i := 0; i < d.N; i++ {
		if d.Terminal[i] {
			flags[i] |= 1
		}
		if d.Timeout[i] {
			flags[i] |= 2
		}
		next := d.NextObs[i*od : (i+1)*od]
		if flags[i] != 0 || i == d.N-1 {
			ends = append(ends, next...)
			continue
		}
		for j, v := range next {
			if math.Float32bits(v) != math.Float32bits(d.Obs[(i+1)*od+j]) {
				return fmt.Errorf("datasets: compact: row %d: next_observations differ from row %d's observations inside an episode", i, i+1)
			}
		}
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	head := make([]byte, 0, 32)
	head = append(head, compactMagic...)
	for _, v := range []int{d.N, d.ObsDim, d.ActDim} {
		head = binary.LittleEndian.AppendUint64(head, uint64(v))
	}
	if _, err := bw.Write(head); err != nil {
		return err
	}
	for _, a := range [][]float32{d.Obs, d.Act, d.Rew} {
		if _, err := bw.Write(shuffled(a)); err != nil {
			return err
		}
	}
	if _, err := bw.Write(flags); err != nil {
		return err
	}
	if _, err := bw.Write(shuffled(ends)); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// ReadCompact reads a data set written by WriteCompact.
func ReadCompact(r io.Reader) (*Dataset, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("datasets: compact: %w", err)
	}
	defer zr.Close()
	br := bufio.NewReader(zr)
	head := make([]byte, len(compactMagic)+24)
	if _, err := io.ReadFull(br, head); err != nil {
		return nil, fmt.Errorf("datasets: compact: header: %w", err)
	}
	if string(head[:len(compactMagic)]) != compactMagic {
		return nil, errors.New("datasets: compact: not a compact data set file")
	}
	var dims [3]int
	for i := range dims {
		v := binary.LittleEndian.Uint64(head[len(compactMagic)+8*i:])
		if v == 0 || v > 1<<31 {
			return nil, fmt.Errorf("datasets: compact: header size %d out of range", v)
		}
		dims[i] = int(v)
	}
	n, od, ad := dims[0], dims[1], dims[2]
	d := &Dataset{N: n, ObsDim: od, ActDim: ad, Meta: map[string]string{}}
	read := func(name string, count int) ([]float32, error) {
		b := make([]byte, 4*count)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("datasets: compact: %s: %w", name, err)
		}
		return unshuffled(b), nil
	}
	if d.Obs, err = read("observations", n*od); err != nil {
		return nil, err
	}
	if d.Act, err = read("actions", n*ad); err != nil {
		return nil, err
	}
	if d.Rew, err = read("rewards", n); err != nil {
		return nil, err
	}
	flags := make([]byte, n)
	if _, err := io.ReadFull(br, flags); err != nil {
		return nil, fmt.Errorf("datasets: compact: flags: %w", err)
	}
	d.Terminal, d.Timeout = make([]bool, n), make([]bool, n)
	nEnds := 0
	for i, f := range flags {
		d.Terminal[i], d.Timeout[i] = f&1 != 0, f&2 != 0
		if f != 0 || i == n-1 {
			nEnds++
		}
	}
	ends, err := read("next_observations", nEnds*od)
	if err != nil {
		return nil, err
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, errors.New("datasets: compact: trailing data")
	}
	d.NextObs = make([]float32, n*od)
	k := 0
	for i := 0; i < n; i++ {
		if flags[i] != 0 || i == n-1 {
			copy(d.NextObs[i*od:(i+1)*od], ends[k*od:(k+1)*od])
			k++
		} else {
			copy(d.NextObs[i*od:(i+1)*od], d.Obs[(i+1)*od:(i+2)*od])
		}
	}
	return d, d.Validate(od, ad)
}

// shuffled lays the little-endian bytes of v out plane by plane: all
// first bytes, then all second bytes, ...
func shuffled(v []float32) []byte {
	n := len(v)
	b := make([]byte, 4*n)
	for i, x := range v {
		u := math.Float32bits(x)
		b[i], b[n+i], b[2*n+i], b[3*n+i] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

// unshuffled inverts shuffled.
func unshuffled(b []byte) []float32 {
	n := len(b) / 4
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(uint32(b[i]) | uint32(b[n+i])<<8 | uint32(b[2*n+i])<<16 | uint32(b[3*n+i])<<24)
	}
	return v
}
