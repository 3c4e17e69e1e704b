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
	s, b, err := newBenchAgent(f, obsDim, actDim, cfg)
	if err != nil {
		return Timing{}, err
	}
	defer s.Close()
	ph, flops, err := s.timeUpdates(b, 3, iters)
	if err != nil {
		return Timing{}, err
	}
	return Timing{Target: median(ph[0]), Critic: median(ph[1]), Actor: median(ph[2]), Other: median(ph[3]),
		Total: median(ph[4]), FLOPs: flops}, nil
}

// newBenchAgent returns the benchmarks' agent of obsDim, actDim and cfg's
// sizes (actions in [-1, 1]), loaded from f unless f is nil, and their fixed
// random batch.
func newBenchAgent(f *ckpt.File, obsDim, actDim int, cfg Config) (*Agent, *buffer.Batch, error) {
	if obsDim <= 0 || actDim <= 0 {
		return nil, nil, fmt.Errorf("sac: bench: obs dim %d and act dim %d must be positive", obsDim, actDim)
	}
	low, high := make([]float64, actDim), make([]float64, actDim)
	for i := range low {
		low[i], high[i] = -1, 1
	}
	s, err := New(obsDim, low, high, cfg)
	if err != nil {
		return nil, nil, err
	}
	if f != nil {
		if err := s.Load(f); err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("sac: bench: %w", err)
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
	return s, b, nil
}

// timeUpdates runs warmup untimed and iters timed updates on b (fresh
// noise each) and returns each timed update's phases in ms — target
// values, critic step, actor step, the rest (α, Polyak), total — and the
// floating-point operations of one timed update's matrix products.
func (s *Agent) timeUpdates(b *buffer.Batch, warmup, iters int) ([5][]float64, float64, error) {
	var ph [5][]float64
	var flops0 uint64
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	for i := -warmup; i < iters; i++ {
		if i == 0 {
			flops0 = ops.ProductFLOPs()
		}
		var st Stats
		fillNormal(s.targetG.Eps.Data, s.rng)
		fillNormal(s.actorG.Eps.Data, s.rng)
		t0 := time.Now()
		alpha := s.Alpha()
		if err := s.computeTarget(b, alpha); err != nil {
			return ph, 0, err
		}
		t1 := time.Now()
		if err := s.updateCritic(b, &st); err != nil {
			return ph, 0, err
		}
		t2 := time.Now()
		logp, err := s.updateActor(b, alpha, &st)
		if err != nil {
			return ph, 0, err
		}
		t3 := time.Now()
		if err := s.updateAlpha(logp, &st); err != nil {
			return ph, 0, err
		}
		s.updateTargets()
		s.Updates++
		t4 := time.Now()
		if i < 0 {
			continue
		}
		for k, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t4.Sub(t0)} {
			ph[k] = append(ph[k], ms(d))
		}
	}
	return ph, float64(ops.ProductFLOPs()-flops0) / float64(iters), nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
