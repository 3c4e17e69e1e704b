package models

// dropoutRNG is a small seeded generator (SplitMix64) that fills dropout
// masks quickly: every 64-bit draw decides four entries with 16 bits each.
type dropoutRNG struct{ state uint64 }

func newDropoutRNG(seed int64) *dropoutRNG { return &dropoutRNG{state: uint64(seed)} }

func (r *dropoutRNG) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fill sets every entry of mask to 0 with probability p (to a 1/65536
// resolution) and to 1/(1-p) otherwise, as inverted dropout does.
func (r *dropoutRNG) fill(mask []float32, p float64) {
	if p <= 0 {
		for i := range mask {
			mask[i] = 1
		}
		return
	}
	keep := float32(1 / (1 - p))
	thr := int32(p * 65536)
	for i := 0; i < len(mask); i += 4 {
		bits := r.next()
		for j := i; j < i+4 && j < len(mask); j++ {
			// drop is 1 when the 16 bits fall below thr, without a branch.
			drop := uint32(int32(bits&0xffff)-thr) >> 31
			mask[j] = keep * float32(1-drop)
			bits >>= 16
		}
	}
}
