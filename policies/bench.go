package policies

import (
	"fmt"
	"math/rand"
	"slices"
	"time"
)

// Latency summarises a set of timings.
type Latency struct {
	N                        int
	Mean, P50, P90, P99, Max time.Duration
}

// String formats the summary in microseconds.
func (l Latency) String() string {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return fmt.Sprintf("n=%d mean=%.1fus p50=%.1fus p90=%.1fus p99=%.1fus max=%.1fus",
		l.N, us(l.Mean), us(l.P50), us(l.P90), us(l.P99), us(l.Max))
}

// Summarize computes the latency summary of ds (nearest-rank percentiles);
// ds is sorted in place.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	rank := func(p float64) time.Duration {
		i := int(float64(len(ds))*p/100+0.999999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Latency{N: len(ds), Mean: total / time.Duration(len(ds)),
		P50: rank(50), P90: rank(90), P99: rank(99), Max: ds[len(ds)-1]}
}

// BenchAct measures in-process Act latency at batch 1: n timed
// deterministic calls (after n/10+10 warm-up calls) on seeded random
// standard-normal observations.
func BenchAct(p *Policy, n int, seed int64) (Latency, error) {
	if n <= 0 {
		return Latency{}, fmt.Errorf("policies: bench needs n > 0, got %d", n)
	}
	rng := rand.New(rand.NewSource(seed))
	const pool = 64
	obs := make([]float32, pool*p.ObsDim())
	for i := range obs {
		obs[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, p.ActDim())
	od := p.ObsDim()
	for i := 0; i < n/10+10; i++ {
		if err := p.ActInto(out, obs[(i%pool)*od:(i%pool+1)*od], false); err != nil {
			return Latency{}, err
		}
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		o := obs[(i%pool)*od : (i%pool+1)*od]
		t0 := time.Now()
		err := p.ActInto(out, o, false)
		ds[i] = time.Since(t0)
		if err != nil {
			return Latency{}, err
		}
	}
	return Summarize(ds), nil
}
