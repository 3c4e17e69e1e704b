package train

import (
	"fmt"
	"hash/crc32"
	"math"

	"github.com/admpo/admpo/datasets"
)

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
