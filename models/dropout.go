package models

import "github.com/admpo/admpo/internal/cpukern"

// dropoutRNG is a small seeded generator (SplitMix64) that fills dropout
// masks quickly: every 64-bit draw decides four entries with 16 bits each.
type dropoutRNG struct{ state uint64 }

func newDropoutRNG(seed int64) *dropoutRNG { return &dropoutRNG{state: uint64(seed)} }

// fill sets every entry of mask to 0 with probability p (to a 1/65536
// resolution) and to 1/(1-p) otherwise, as inverted dropout does (the draws
// in C: cpukern.DropoutMask).
func (r *dropoutRNG) fill(mask []float32, p float64) {
	if p <= 0 {
		for i := range mask {
			mask[i] = 1
		}
		return
	}
	cpukern.DropoutMask(mask, &r.state, p)
}
