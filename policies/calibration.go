package policies

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// DefaultPercentiles are the percentiles Calibrate records by default.
var DefaultPercentiles = []float64{0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100}

// Calibration is the distribution of U^ADM measured on training data, as a
// table of percentiles.
type Calibration struct {
	// Samples is how many U^ADM values the table was computed from.
	Samples int `json:"samples"`
	// Quantiles are sorted by P (strictly increasing); U is non-decreasing.
	Quantiles []Quantile `json:"quantiles"`
	// Range is the per-dimension range of the observations the calibration
	// data held; the monitor scores a history with a value outside it (or
	// an action outside the manifest's bounds) as out of distribution.
	// Absent in bundles exported before 2026-11-27 (no range check).
	Range *InputRange `json:"range,omitempty"`
}

// InputRange is the smallest and largest value of each observation
// dimension in the data a bundle's monitor was calibrated on.
type InputRange struct {
	ObsLow  []float64 `json:"obs_low"`
	ObsHigh []float64 `json:"obs_high"`
}

// validate checks the range's sizes and values for od observation values.
func (r *InputRange) validate(od int) error {
	if len(r.ObsLow) != od || len(r.ObsHigh) != od {
		return fmt.Errorf("policies: calibration range has %d/%d observation bounds, want obs_dim=%d", len(r.ObsLow), len(r.ObsHigh), od)
	}
	for j := range od {
		l, h := r.ObsLow[j], r.ObsHigh[j]
		if math.IsNaN(l) || math.IsNaN(h) || math.IsInf(l, 0) || math.IsInf(h, 0) || l > h {
			return fmt.Errorf("policies: calibration range of observation value %d is [%v, %v]: want finite low <= high", j, l, h)
		}
	}
	return nil
}

// excess is how far x lies outside [low, high], in units of the range's
// width (at least 1e-6): 0 inside, growing with the distance outside. A
// value within float32 rounding (a relative 1e-6) of a bound is inside, so
// that an action squashed onto a bound by float32 arithmetic is not
// flagged.
func excess(x, low, high float64) float64 {
	w := max(high-low, 1e-6)
	switch {
	case x > high+1e-6*max(1, math.Abs(high)):
		return (x - high) / w
	case x < low-1e-6*max(1, math.Abs(low)):
		return (low - x) / w
	}
	return 0
}

// Quantile says that a fraction P/100 of the training U^ADM values are at
// most U.
type Quantile struct {
	P float64 `json:"p"` // percentile in [0, 100]
	U float64 `json:"u"`
}

// Calibrate computes the given percentiles (DefaultPercentiles when none)
// of us, with linear interpolation between order statistics (numpy's
// default "linear" method).
func Calibrate(us []float64, percentiles ...float64) (*Calibration, error) {
	if len(us) == 0 {
		return nil, errors.New("policies: calibration needs at least one U^ADM value")
	}
	if len(percentiles) == 0 {
		percentiles = DefaultPercentiles
	}
	x := slices.Clone(us)
	for i, u := range x {
		if math.IsNaN(u) || math.IsInf(u, 0) || u < 0 {
			return nil, fmt.Errorf("policies: calibration value %d is %v (want finite, >= 0)", i, u)
		}
	}
	slices.Sort(x)
	c := &Calibration{Samples: len(x)}
	for _, p := range percentiles {
		h := float64(len(x)-1) * p / 100
		lo := int(math.Floor(h))
		lo = min(max(lo, 0), len(x)-1)
		hi := min(lo+1, len(x)-1)
		c.Quantiles = append(c.Quantiles, Quantile{P: p, U: x[lo] + (h-float64(lo))*(x[hi]-x[lo])})
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks the table's order and ranges.
func (c *Calibration) Validate() error {
	if len(c.Quantiles) == 0 {
		return errors.New("policies: calibration has no quantiles")
	}
	if c.Samples <= 0 {
		return fmt.Errorf("policies: calibration from %d samples", c.Samples)
	}
	for i, q := range c.Quantiles {
		if !(q.P >= 0 && q.P <= 100) {
			return fmt.Errorf("policies: calibration percentile %d is %v (want 0..100)", i, q.P)
		}
		if math.IsNaN(q.U) || math.IsInf(q.U, 0) || q.U < 0 {
			return fmt.Errorf("policies: calibration value at p%v is %v (want finite, >= 0)", q.P, q.U)
		}
		if i > 0 && (q.P <= c.Quantiles[i-1].P || q.U < c.Quantiles[i-1].U) {
			return fmt.Errorf("policies: calibration entry %d (p%v=%v) is out of order after p%v=%v",
				i, q.P, q.U, c.Quantiles[i-1].P, c.Quantiles[i-1].U)
		}
	}
	return nil
}

// Quantile returns the recorded U at percentile p and whether it is in the
// table.
func (c *Calibration) Quantile(p float64) (float64, bool) {
	for _, q := range c.Quantiles {
		if q.P == p {
			return q.U, true
		}
	}
	return 0, false
}

// Percentile places u within the calibration: the percentile of the
// training U^ADM distribution at u, interpolated linearly between table
// entries. Below the first entry it interpolates from (0, 0); above the last
// it returns the last entry's P (100 with DefaultPercentiles: u is at least
// as large as anything seen in training).
func (c *Calibration) Percentile(u float64) float64 {
	q := c.Quantiles
	if len(q) == 0 || math.IsNaN(u) {
		return math.NaN()
	}
	if u < q[0].U {
		if u <= 0 {
			return 0
		}
		return q[0].P * u / q[0].U
	}
	i := 0 // the last entry with U <= u
	for i+1 < len(q) && q[i+1].U <= u {
		i++
	}
	if i == len(q)-1 {
		return q[i].P
	}
	a, b := q[i], q[i+1]
	return a.P + (b.P-a.P)*(u-a.U)/(b.U-a.U)
}
