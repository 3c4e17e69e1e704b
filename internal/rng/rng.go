package rng

import (
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
)

// Source is a PCG source that implements rand.Source64 and
// encoding.BinaryMarshaler.
type Source struct{ pcg *randv2.PCG }

// NewSource returns a source seeded with seed.
func NewSource(seed int64) *Source {
	return &Source{pcg: randv2.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^uint64(seed)*0xbf58476d1ce4e5b9)}
}

// New returns a *rand.Rand over a fresh Source and the source itself.
func New(seed int64) (*rand.Rand, *Source) {
	s := NewSource(seed)
	return rand.New(s), s
}

// Uint64 returns 64 random bits.
func (s *Source) Uint64() uint64 { return s.pcg.Uint64() }

// Int63 returns a non-negative random int64.
func (s *Source) Int63() int64 { return int64(s.pcg.Uint64() >> 1) }

// Seed resets the source to the state NewSource(seed) has.
func (s *Source) Seed(seed int64) { *s = *NewSource(seed) }

// MarshalBinary saves the source's state.
func (s *Source) MarshalBinary() ([]byte, error) { return s.pcg.MarshalBinary() }

// UnmarshalBinary restores a state saved by MarshalBinary.
func (s *Source) UnmarshalBinary(b []byte) error {
	if err := s.pcg.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("rng: restoring state: %w", err)
	}
	return nil
}
