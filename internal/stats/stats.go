package stats

import (
	"math"
	"sort"
	"time"
)

// Finite reports whether every value of v is neither NaN nor ±Inf.
func Finite(v []float32) bool { return FirstNonFinite(v) < 0 }

// FirstNonFinite is the index of the first NaN or ±Inf in v, or -1.
func FirstNonFinite(v []float32) int {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}

// Pearson is the sample correlation coefficient of x and y (NaN for fewer
// than two points, series of different lengths or a constant series).
func Pearson(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 || len(y) != len(x) {
		return math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= n
	my /= n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Spearman is the Pearson correlation of the ranks of x and y.
func Spearman(x, y []float64) float64 {
	return Pearson(Ranks(x), Ranks(y))
}

// Ranks returns the 1-based rank of every value; ties get their mean rank.
func Ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// MeanStd is the mean and the population standard deviation of v.
func MeanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

// MedianMillis calls f warmup times untimed, then iters times timed, and
// returns the median of the timed calls in milliseconds; it stops at f's
// first error.
func MedianMillis(warmup, iters int, f func() error) (float64, error) {
	ts := make([]float64, 0, iters)
	for i := -warmup; i < iters; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if i >= 0 {
			ts = append(ts, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	if len(ts) == 0 {
		return 0, nil
	}
	sort.Float64s(ts)
	return ts[len(ts)/2], nil
}
