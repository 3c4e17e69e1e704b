package policies

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
)

func TestCalibrateClosedForm(t *testing.T) {
	// 0..100 in random order: the p-th percentile is p.
	us := make([]float64, 101)
	for i, j := range rand.New(rand.NewSource(1)).Perm(101) {
		us[i] = float64(j)
	}
	c, err := Calibrate(us)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range c.Quantiles {
		if math.Abs(q.U-q.P) > 1e-12 {
			t.Fatalf("p%v = %v, want %v", q.P, q.U, q.P)
		}
		if got := c.Percentile(q.U); math.Abs(got-q.P) > 1e-9 {
			t.Fatalf("Percentile(%v) = %v, want %v", q.U, got, q.P)
		}
	}
	if c.Samples != 101 {
		t.Fatalf("samples %d", c.Samples)
	}
	if u, ok := c.Quantile(95); !ok || u != 95 {
		t.Fatalf("Quantile(95) = %v %v", u, ok)
	}
	if got := c.Percentile(1000); got != 100 {
		t.Fatalf("above the maximum: %v", got)
	}
	if got := c.Percentile(-1); got != 0 {
		t.Fatalf("below 0: %v", got)
	}
	// Ties: a point mass at 0.2 covers percentiles up to where it ends.
	c2, err := Calibrate([]float64{0.2, 0.2, 0.2, 1}, 0, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Percentile(0.2); got != 50 {
		t.Fatalf("tied value percentile %v, want 50", got)
	}
	for _, bad := range [][]float64{nil, {1, math.NaN()}, {-1}, {math.Inf(1)}} {
		if _, err := Calibrate(bad); err == nil {
			t.Fatalf("Calibrate(%v) accepted", bad)
		}
	}
	if _, err := Calibrate([]float64{1, 2}, 50, 40); err == nil {
		t.Fatal("decreasing percentiles accepted")
	}
}

// TestCalibrateMatchesNumpy compares the percentiles with numpy.percentile
// (linear method) on random data.
func TestCalibrateMatchesNumpy(t *testing.T) {
	pyref.Need(t, "numpy")
	rng := rand.New(rand.NewSource(2))
	us := make([]float64, 537)
	for i := range us {
		us[i] = math.Exp(rng.NormFloat64()) // log-normal, like U^ADM
	}
	c, err := Calibrate(us)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	pyref.RunJSON(t, "import json,sys,numpy as np; d=json.load(sys.stdin); print(json.dumps(np.percentile(np.array(d['u']), d['p']).tolist()))",
		map[string]any{"u": us, "p": DefaultPercentiles}, &want)
	for i, q := range c.Quantiles {
		if math.Abs(q.U-want[i]) > 1e-12*math.Max(1, want[i]) {
			t.Fatalf("p%v: %v, numpy %v", q.P, q.U, want[i])
		}
	}
	// Percentile inverts the table between entries (monotone, in range).
	prev := -1.0
	for u := 0.0; u < 30; u += 0.01 {
		p := c.Percentile(u)
		if p < prev-1e-12 || p < 0 || p > 100 {
			t.Fatal(fmt.Sprintf("Percentile not monotone in [0,100] at u=%v: %v after %v", u, p, prev))
		}
		prev = p
	}
}

// TestCalibrationRangeValidated: a manifest's calibration range must give
// one finite low <= high per observation value.
func TestCalibrationRangeValidated(t *testing.T) {
	f := newFixture(t, 2, 4, 2, 3)
	for _, c := range []struct {
		r    InputRange
		want string
	}{
		{InputRange{ObsLow: []float64{0, 0, 0}, ObsHigh: []float64{1, 1, 1}}, "3/3 observation bounds, want obs_dim=4"},
		{InputRange{ObsLow: []float64{0, 0, 2, 0}, ObsHigh: []float64{1, 1, 1, 1}}, "observation value 2 is [2, 1]"},
		{InputRange{ObsLow: []float64{0, math.NaN(), 0, 0}, ObsHigh: []float64{1, 1, 1, 1}}, "observation value 1 is [NaN, 1]"},
		{InputRange{ObsLow: []float64{0, 0, 0, 0}, ObsHigh: []float64{1, 1, 1, math.Inf(1)}}, "observation value 3 is [0, +Inf]"},
	} {
		b := f.bundle(true)
		cal := *b.Manifest.Calibration
		cal.Range = &c.r
		b.Manifest.Calibration = &cal
		err := WriteBundle(filepath.Join(t.TempDir(), "b"), b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("range %+v: %v, want an error containing %q", c.r, err, c.want)
		}
	}
	b := f.bundle(true)
	cal := *b.Manifest.Calibration
	cal.Range = &InputRange{ObsLow: []float64{-1, -1, 0, 5}, ObsHigh: []float64{1, 1, 0, 5}}
	b.Manifest.Calibration = &cal
	dir := filepath.Join(t.TempDir(), "ok")
	if err := WriteBundle(dir, b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadBundle(dir)
	if err != nil || !reflect.DeepEqual(back.Manifest.Calibration.Range, cal.Range) {
		t.Fatalf("range after a round trip: %+v, %v", back.Manifest.Calibration.Range, err)
	}
}
