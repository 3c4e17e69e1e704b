package stats

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestCorrelations(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	y := []float64{2, 1, 4, 3}
	// cov = (−1.5·−0.5 + −0.5·−1.5 + 0.5·1.5 + 1.5·0.5)/n = 3/n, var = 5/n each: r = 0.6.
	if r := Pearson(x, y); math.Abs(r-0.6) > 1e-12 {
		t.Errorf("Pearson %v, want 0.6", r)
	}
	// x = 1..4, y = (1, 3, 2, 4): cov 1.0, var 1.25 each: r = 0.8.
	if r := Pearson(x, []float64{1, 3, 2, 4}); math.Abs(r-0.8) > 1e-12 {
		t.Errorf("Pearson %v, want 0.8", r)
	}
	if r := Pearson(x, []float64{4, 3, 2, 1}); math.Abs(r+1) > 1e-12 {
		t.Errorf("Pearson of a reversed series %v, want -1", r)
	}
	// Spearman is invariant to monotone maps: exp(y) has the same ranks.
	ey := []float64{math.Exp(2), math.Exp(1), math.Exp(4), math.Exp(3)}
	if r := Spearman(x, ey); math.Abs(r-0.6) > 1e-12 {
		t.Errorf("Spearman %v, want 0.6", r)
	}
	for _, bad := range [][2][]float64{{{1, 1}, {1, 2}}, {{1}, {2}}, {{1, 2, 3}, {1, 2}}} {
		if r := Pearson(bad[0], bad[1]); !math.IsNaN(r) {
			t.Errorf("Pearson(%v, %v) = %v, want NaN", bad[0], bad[1], r)
		}
	}
}

func TestRanks(t *testing.T) {
	r := Ranks([]float64{10, 30, 20, 20, 5})
	want := []float64{2, 5, 3.5, 3.5, 1}
	for i := range r {
		if r[i] != want[i] {
			t.Fatalf("Ranks %v, want %v", r, want)
		}
	}
}

func TestFinite(t *testing.T) {
	if !Finite([]float32{0, -1, 3e38}) || Finite([]float32{1, float32(math.NaN())}) || Finite([]float32{float32(math.Inf(-1))}) {
		t.Error("Finite misclassifies")
	}
	for _, c := range []struct {
		v    []float32
		want int
	}{{nil, -1}, {[]float32{0, 1}, -1}, {[]float32{0, float32(math.Inf(1)), float32(math.NaN())}, 1}} {
		if got := FirstNonFinite(c.v); got != c.want {
			t.Errorf("FirstNonFinite(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}

// TestMeanStd checks the population statistics against the closed form of
// {2, 4, 4, 4, 5, 5, 7, 9}: mean 5, standard deviation 2 (not the sample 2.14).
func TestMeanStd(t *testing.T) {
	m, s := MeanStd([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || s != 2 {
		t.Fatalf("MeanStd = %v, %v; want 5, 2", m, s)
	}
}

// TestMedianMillis times sleeps of 1, 400 and 50 ms after two untimed
// calls: the median is 50 ms plus the sleep's overshoot (a loaded machine
// has overshot by 17 ms; 70 ms are allowed), below the mean (150 ms) and
// the largest, above the smallest.
func TestMedianMillis(t *testing.T) {
	sleeps := []time.Duration{0, 0, time.Millisecond, 400 * time.Millisecond, 50 * time.Millisecond}
	calls := 0
	got, err := MedianMillis(2, 3, func() error {
		time.Sleep(sleeps[calls])
		calls++
		return nil
	})
	if err != nil || calls != 5 || got < 50 || got >= 120 {
		t.Errorf("median of timed sleeps 1, 400, 50 ms after 2 warm-up calls: %v ms, %v, %d calls", got, err, calls)
	}
	boom := errors.New("boom")
	if _, err := MedianMillis(1, 3, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("error from f: got %v", err)
	}
}
