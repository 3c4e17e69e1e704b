package train

import (
	"fmt"
	"hash/crc32"
	"math"

	"github.com/admpo/admpo/datasets"
)

// ReplayFromDataset copies an offline data set into a new buffer of exactly
// its size, row by row, so sequences follow the data set's episodes. Every
// episode ends at its terminal or timeout flag; a final tail without either
// (a data set cut mid-episode) is marked as a timeout, so no roll-out start
// or ADM training sequence runs past the data.
func ReplayFromDataset(d *datasets.Dataset, seed int64) (*Replay, error) {
	if d == nil || d.N <= 0 {
		return nil, fmt.Errorf("train: empty data set")
	}
	r, err := NewReplay(d.ObsDim, d.ActDim, d.N, seed)
	if err != nil {
		return nil, err
	}
	od, ad := d.ObsDim, d.ActDim
	for i := 0; i < d.N; i++ {
		term, tout := d.Terminal[i], d.Timeout[i]
		if i == d.N-1 && !term {
			tout = true
		}
		if err := r.Add(d.Obs[i*od:(i+1)*od], d.Act[i*ad:(i+1)*ad], d.Rew[i], d.NextObs[i*od:(i+1)*od], term, tout); err != nil {
			return nil, fmt.Errorf("train: data set row %d: %w", i, err)
		}
	}
	return r, nil
}

// datasetSum is a CRC-32 over a data set's transitions and flags; a resumed
// run checks that its data set file still holds the same data.
func datasetSum(d *datasets.Dataset) uint32 {
	h := crc32.NewIEEE()
	buf := make([]byte, 0, 4096)
	put := func(v []float32) {
		for _, x := range v {
			b := math.Float32bits(x)
			buf = append(buf, byte(b), byte(b>>8), byte(b>>16), byte(b>>24))
			if len(buf) >= 4000 {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	put(d.Obs)
	put(d.Act)
	put(d.Rew)
	put(d.NextObs)
	for i := range d.Terminal {
		var f byte
		if d.Terminal[i] {
			f |= 1
		}
		if d.Timeout[i] {
			f |= 2
		}
		buf = append(buf, f)
		if len(buf) >= 4000 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return h.Sum32()
}

// LoadOfflineDataset reads a D4RL file or a Minari directory and checks
// it against a task's sizes.
func LoadOfflineDataset(path string, obsDim, actDim int) (*datasets.Dataset, error) {
	d, err := datasets.Read(path)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(obsDim, actDim); err != nil {
		return nil, fmt.Errorf("train: data set %s: %w", path, err)
	}
	return d, nil
}
