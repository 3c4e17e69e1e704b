package rollout

import (
	"errors"
	"fmt"
	"math"
)

// DoneSpec is a termination rule on an observation as data: a row ends when
// (Finite) any value is NaN or ±Inf, or when any range's condition fails on
// any of its dimensions. Each condition is evaluated in the Go rules'
// negated form, done = !(lo < o && o < hi), so a NaN fails every condition
// that has a bound and ends the row even without Finite, as the Go
// functions do. The zero DoneSpec never ends a row (Never).
//
// Bounds are float32 and are compared with the float32 observation. A rule
// written in float64 converts each bound exactly first (envs does).
type DoneSpec struct {
	Finite bool    // any NaN or ±Inf in the row ends it
	Ranges []Range // the row ends when one fails
}

// Range is a condition on the dimension Dim of an observation, or with
// ToEnd on every dimension from Dim on. It holds on a value x (|x| with Abs)
// when Lo < x (Lo <= x with LoIncl) if HasLo, and x < Hi (x <= Hi with
// HiIncl) if HasHi; a range has at least one bound.
type Range struct {
	Dim    int
	ToEnd  bool
	Abs    bool
	Lo, Hi float32
	HasLo  bool
	HasHi  bool
	LoIncl bool
	HiIncl bool
}

// Never reports whether the spec never ends a row (no ranges, no Finite).
func (s *DoneSpec) Never() bool { return !s.Finite && len(s.Ranges) == 0 }

// holds reports whether the range's condition holds on x; NaN never holds.
func (r *Range) holds(x float32) bool {
	if r.Abs {
		x = float32(math.Abs(float64(x)))
	}
	if r.HasLo && !(r.Lo < x || r.LoIncl && r.Lo == x) {
		return false
	}
	if r.HasHi && !(x < r.Hi || r.HiIncl && x == r.Hi) {
		return false
	}
	return true
}

// Eval reports whether the observation obs ends its row: the Go reference
// for a kernel's evaluation. obs must hold every dimension the ranges name
// (Validate checks a spec against a size).
func (s *DoneSpec) Eval(obs []float32) bool {
	if s.Finite {
		for _, v := range obs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return true
			}
		}
	}
	for i := range s.Ranges {
		r := &s.Ranges[i]
		end := r.Dim + 1
		if r.ToEnd {
			end = len(obs)
		}
		for _, v := range obs[r.Dim:end] {
			if !r.holds(v) {
				return true
			}
		}
	}
	return false
}

// Validate checks the spec against observations of obsDim values: every
// range names a dimension in [0, obsDim), has a bound and no NaN bound.
func (s *DoneSpec) Validate(obsDim int) error {
	if obsDim < 1 {
		return fmt.Errorf("rollout: DoneSpec: observation size %d must be >= 1", obsDim)
	}
	var errs []error
	for i, r := range s.Ranges {
		switch {
		case r.Dim < 0 || r.Dim >= obsDim:
			errs = append(errs, fmt.Errorf("range %d: dimension %d is outside [0, %d)", i, r.Dim, obsDim))
		case !r.HasLo && !r.HasHi:
			errs = append(errs, fmt.Errorf("range %d (dimension %d): no bound (HasLo or HasHi)", i, r.Dim))
		case r.HasLo && math.IsNaN(float64(r.Lo)) || r.HasHi && math.IsNaN(float64(r.Hi)):
			errs = append(errs, fmt.Errorf("range %d (dimension %d): a bound is NaN", i, r.Dim))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("rollout: DoneSpec for %d values: %w", obsDim, errors.Join(errs...))
	}
	return nil
}
