package sac

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models/ops"
)

// Timing is the median time of each phase of a SAC update, in ms, and the
// work of one update.
type Timing struct {
	Target, Critic, Actor, Other, Total float64
	// FLOPs are the floating-point operations of one update's matrix
	// products (target values, critic and actor steps, forward and backward).
	FLOPs float64
}

// BenchUpdate times SAC updates at Hopper's sizes (obs 11, act 3,
// 256x256 networks, batch 256) on a fixed random batch: iters timed updates
// after a few warm-up ones. It reports median per-phase times; Critic and
// Actor include their Adam steps.
func BenchUpdate(iters int) (Timing, error) {
	return BenchUpdateFrom(nil, 11, 3, DefaultConfig(3), iters)
}

// BenchUpdateFrom is BenchUpdate for an agent of obsDim, actDim and cfg's
// sizes whose networks, target critics, entropy coefficient and optimiser
// state are loaded from f (a run's checkpoint; nil: fresh networks). A
// trained agent's state can cost otherwise than a fresh one's (e.g. Adam
// moments of dead ReLU units near the subnormal range). The batch is random
// either way.
func BenchUpdateFrom(f *ckpt.File, obsDim, actDim int, cfg Config, iters int) (Timing, error) {
	if iters <= 0 {
		return Timing{}, fmt.Errorf("sac: bench: iters %d must be positive", iters)
	}
	if obsDim <= 0 || actDim <= 0 {
		return Timing{}, fmt.Errorf("sac: bench: obs dim %d and act dim %d must be positive", obsDim, actDim)
	}
	low, high := make([]float64, actDim), make([]float64, actDim)
	for i := range low {
		low[i], high[i] = -1, 1
	}
	s, err := New(obsDim, low, high, cfg)
	if err != nil {
		return Timing{}, err
	}
	defer s.Close()
	if f != nil {
		if err := s.Load(f); err != nil {
			return Timing{}, fmt.Errorf("sac: bench: %w", err)
		}
	}
	rng := rand.New(rand.NewSource(7))
	b := buffer.NewBatch(cfg.BatchSize, obsDim, actDim)
	for _, v := range [][]float32{b.Obs, b.NextObs, b.Rew} {
		fillNormal(v, rng)
	}
	for i := range b.Act {
		b.Act[i] = float32(2*rng.Float64() - 1)
	}
	var tt, tc, ta, to, tot []float64
	var flops0 uint64
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	for i := -3; i < iters; i++ {
		if i == 0 {
			flops0 = ops.ProductFLOPs()
		}
		var st Stats
		fillNormal(s.targetG.Eps.Data, s.rng)
		fillNormal(s.actorG.Eps.Data, s.rng)
		t0 := time.Now()
		alpha := s.Alpha()
		if err := s.computeTarget(b, alpha); err != nil {
			return Timing{}, err
		}
		t1 := time.Now()
		if err := s.updateCritic(b, &st); err != nil {
			return Timing{}, err
		}
		t2 := time.Now()
		logp, err := s.updateActor(b, alpha, &st)
		if err != nil {
			return Timing{}, err
		}
		t3 := time.Now()
		if err := s.updateAlpha(logp, &st); err != nil {
			return Timing{}, err
		}
		s.updateTargets()
		s.Updates++
		t4 := time.Now()
		if i < 0 {
			continue
		}
		tt, tc, ta = append(tt, ms(t1.Sub(t0))), append(tc, ms(t2.Sub(t1))), append(ta, ms(t3.Sub(t2)))
		to, tot = append(to, ms(t4.Sub(t3))), append(tot, ms(t4.Sub(t0)))
	}
	return Timing{Target: median(tt), Critic: median(tc), Actor: median(ta), Other: median(to), Total: median(tot),
		FLOPs: float64(ops.ProductFLOPs()-flops0) / float64(iters)}, nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
