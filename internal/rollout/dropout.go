package rollout

import (
	"math"

	"github.com/admpo/admpo/internal/cpukern"
)

// MC dropout's keep flags in a roll-out come from a counter-based generator
// keyed by (seed, roll-out step, start row, k): the mask of row r's k-step
// plan at step t does not depend on how the batch is cut into calls, on the
// worker count or on the engine (infer's direct and incremental engines, a
// device engine). The roll-out draws the seed with one rng.Int63() before
// any other draw, and only when the model has dropout.

// DropoutKeep fills keep with the keep flags (1 keep, 0 drop, each dropped
// with probability p to a 2⁻³² resolution) of the k-step plan of start row
// row at roll-out step step, for the roll-out seed seed. Entry b·hidden+u is
// unit u of ResBlock b; the engines use len(keep) = res_blocks·hidden. It is
// the definition the engines follow: cpukern.DropoutFill from
// DropoutBase(seed, step, row, k) at DropThreshold(p).
func DropoutKeep(seed int64, step, row, k int, p float64, keep []float32) {
	cpukern.DropoutFill(DropoutBase(seed, step, row, k), DropThreshold(p), keep, len(keep), len(keep), 1)
}

// splitmix64 is SplitMix64's output function of state z.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// golden is SplitMix64's increment.
const golden = 0x9e3779b97f4a7c15

// DropoutBase hashes the key (seed, step, row, k) into the generator state
// that cpukern.DropoutFill draws the plan's keep flags from.
func DropoutBase(seed int64, step, row, k int) uint64 {
	z := splitmix64(uint64(seed) + golden)
	for _, v := range []int{step, row, k} {
		z = splitmix64(z ^ (uint64(v) + golden))
	}
	return z
}

// DropThreshold is the drop probability p as a 32-bit threshold: a unit is
// dropped when its 32 random bits fall below it.
func DropThreshold(p float64) uint32 {
	return uint32(math.Min(math.Round(p*(1<<32)), math.MaxUint32))
}
