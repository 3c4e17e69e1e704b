package dynamics

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/models/ops"
)

// BenchADMTrainStep times ADM train steps at the reference size: Hopper's
// dims (obs 11, act 3), m = 5, batch 256, a 3x200 GRU and 4 ResBlocks with
// dropout, one m-step unroll per start state, on a fixed random batch. A
// step is forward, backward and Adam. It returns the median ms per step of
// iters timed steps after three warm-up ones and the floating-point
// operations of one step's matrix products.
func BenchADMTrainStep(iters int) (ms, flops float64, err error) {
	return BenchADMTrainStepConfig(models.DefaultADMConfig(11, 3, 5), iters)
}

// BenchADMTrainStepConfig is BenchADMTrainStep for another ADM size (e.g.
// one GRU layer, to compare with other measurements).
func BenchADMTrainStepConfig(cfg models.ADMConfig, iters int) (ms, flops float64, err error) {
	if iters <= 0 {
		return 0, 0, fmt.Errorf("dynamics: bench ADM: iters %d must be positive", iters)
	}
	rng := rand.New(rand.NewSource(5))
	m, err := models.NewADM(cfg, rng)
	if err != nil {
		return 0, 0, err
	}
	const batch = 256
	g, err := models.NewADMTrainGraph(m, batch, models.ADMDropout, 6)
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	for i := range g.X {
		g.X[i] = float32(rng.NormFloat64())
	}
	for i := range g.Target {
		g.Target[i] = float32(0.1 * rng.NormFloat64())
	}
	for i := range g.Weight {
		g.Weight[i] = 1
	}
	opt := models.NewAdam(g.Params, 3e-4)
	var ts []float64
	var flops0 uint64
	for i := -3; i < iters; i++ {
		if i == 0 {
			flops0 = ops.ProductFLOPs()
		}
		t0 := time.Now()
		if err := g.Run(); err != nil {
			return 0, 0, err
		}
		if err := opt.Step(); err != nil {
			return 0, 0, err
		}
		if i >= 0 {
			ts = append(ts, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	sort.Float64s(ts)
	return ts[len(ts)/2], float64(ops.ProductFLOPs()-flops0) / float64(iters), nil
}
