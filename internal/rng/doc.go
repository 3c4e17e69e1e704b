// Package rng provides seeded random sources whose full state can be saved
// and restored, so that a resumed run draws exactly the numbers the
// uninterrupted run would have drawn. They plug into math/rand's *rand.Rand,
// whose methods (Float64, NormFloat64, Intn, ...) keep no state of their own
// beyond the source.
package rng
