package dynamics

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev"
	"github.com/admpo/admpo/device/ensdev"
	"github.com/admpo/admpo/internal/stats"
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

// DeviceStepTiming is a model's train step timed on a device
// (BenchADMTrainStepOn, BenchEnsembleTrainStepOn): medians in milliseconds.
type DeviceStepTiming struct {
	// Step is the step alone on the batch already on the device, waited
	// for (device.Sync).
	Step float64
	// FitPath is a step as a fit takes it: the batch uploaded and the step
	// (its NLL summed on the device, not read back), waited for.
	FitPath float64
}

// timeDeviceStep times step alone and upload followed by step, each waited
// for, iters times after a few warm-up ones.
func timeDeviceStep(d device.Device, what string, iters int, upload, step func() error) (DeviceStepTiming, error) {
	var tm DeviceStepTiming
	if iters <= 0 {
		return tm, fmt.Errorf("dynamics: bench %s on a device: iters %d must be positive", what, iters)
	}
	if err := upload(); err != nil {
		return tm, fmt.Errorf("dynamics: bench %s on %s: %w", what, d.Name(), err)
	}
	var err error
	median := func(f func() error) (float64, error) { return stats.MedianMillis(3, iters, f) }
	if tm.Step, err = median(func() error {
		if err := step(); err != nil {
			return err
		}
		return d.Sync()
	}); err != nil {
		return tm, fmt.Errorf("dynamics: bench %s on %s: %w", what, d.Name(), err)
	}
	if tm.FitPath, err = median(func() error {
		if err := upload(); err != nil {
			return err
		}
		if err := step(); err != nil {
			return err
		}
		return d.Sync()
	}); err != nil {
		return tm, fmt.Errorf("dynamics: bench %s on %s: %w", what, d.Name(), err)
	}
	return tm, nil
}

// BenchADMTrainStepOn times BenchADMTrainStep's step (the reference size,
// batch 256, dropout on) on d (package admdev), recorded as a device graph
// when graph is set: iters timed steps of each kind after a few warm-up
// ones.
func BenchADMTrainStepOn(d device.Device, iters int, graph bool) (DeviceStepTiming, error) {
	if iters <= 0 {
		return DeviceStepTiming{}, fmt.Errorf("dynamics: bench ADM on a device: iters %d must be positive", iters)
	}
	rng := rand.New(rand.NewSource(5))
	m, err := models.NewADM(models.DefaultADMConfig(11, 3, 5), rng)
	if err != nil {
		return DeviceStepTiming{}, err
	}
	const batch = 256
	c := m.Cfg
	rows := c.M * batch
	b := admdev.Batch{X: make([]float32, rows*(c.ObsDim+c.ActDim)), Target: make([]float32, rows*(c.ObsDim+1)),
		Weight: make([]float32, rows)}
	fillBenchBatch(rng, b.X, b.Target, b.Weight)
	fc := DefaultADMFitConfig()
	fc.Batch, fc.DeviceGraph = batch, graph
	tr, err := newADMTrainer(d, m, fc, 6)
	if err != nil {
		return DeviceStepTiming{}, err
	}
	defer tr.Close()
	return timeDeviceStep(d, "ADM", iters, func() error { return tr.Upload(b) }, tr.Step)
}

// BenchEnsembleTrainStepOn times MBPO's ensemble train step (seven members
// of 4x200 swish layers, hopper's dimensions, batch 256 per member,
// models.EnsembleDecay) on d (package ensdev), recorded as a device graph
// when graph is set: iters timed steps of each kind after a few warm-up
// ones.
func BenchEnsembleTrainStepOn(d device.Device, iters int, graph bool) (DeviceStepTiming, error) {
	if iters <= 0 {
		return DeviceStepTiming{}, fmt.Errorf("dynamics: bench ensemble on a device: iters %d must be positive", iters)
	}
	e, rng := newBenchEnsemble()
	var b ensdev.Batch
	for range e.Members {
		x, tg, w := make([]float32, benchBatch*(e.ObsDim+e.ActDim)), make([]float32, benchBatch*(e.ObsDim+1)), make([]float32, benchBatch)
		fillBenchBatch(rng, x, tg, w)
		b.X, b.Target, b.Weight = append(b.X, x), append(b.Target, tg), append(b.Weight, w)
	}
	fc := DefaultEnsembleFitConfig()
	fc.Batch, fc.DeviceGraph = benchBatch, graph
	opt := models.NewAdamSlices(e.TrainedTensors(), fc.LR)
	tr, err := newEnsembleTrainer(d, e, fc, opt)
	if err != nil {
		return DeviceStepTiming{}, err
	}
	defer tr.Close()
	return timeDeviceStep(d, "ensemble", iters, func() error { return tr.Upload(b) }, tr.Step)
}

// BenchEnsembleTrainStep times one train step of MBPO's ensemble on the CPU
// at hopper's sizes (7 members of 4x200 Swish layers, batch 256 each, the
// per-layer weight decay, Adam), as BenchEnsembleTrainStepOn does on a
// device: the median of iters steps after a few warm-up ones, in ms, and
// the floating-point operations of one step's matrix products.
func BenchEnsembleTrainStep(iters int) (ms, flops float64, err error) {
	if iters <= 0 {
		return 0, 0, fmt.Errorf("dynamics: bench ensemble: iters %d must be positive", iters)
	}
	e, rng := newBenchEnsemble()
	g, err := models.NewEnsembleTrainGraph(e, benchBatch, models.EnsembleDecay)
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	for m := range e.Members {
		fillBenchBatch(rng, g.X[m], g.Target[m], g.Weight[m])
	}
	opt := models.NewAdam(g.Params, DefaultEnsembleFitConfig().LR)
	const warmup = 3
	flops0 := ops.ProductFLOPs()
	ms, err = stats.MedianMillis(warmup, iters, func() error {
		if err := g.Run(); err != nil {
			return err
		}
		return opt.Step()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("dynamics: bench ensemble: %w", err)
	}
	return ms, float64(ops.ProductFLOPs()-flops0) / float64(warmup+iters), nil
}

// benchBatch is the rows per member of the ensemble benchmarks.
const benchBatch = 256

// newBenchEnsemble returns the ensemble the benchmarks time, MBPO's at
// hopper's sizes (7 members of 4x200 layers), and the generator that drew
// it, to draw the batch from next.
func newBenchEnsemble() (*models.Ensemble, *rand.Rand) {
	rng := rand.New(rand.NewSource(5))
	return models.NewEnsemble(11, 3, 7, []int{200, 200, 200, 200}, rng), rng
}

// fillBenchBatch fills a benchmark batch: standard normal inputs, targets
// of spread 0.1, every row weighted 1.
func fillBenchBatch(rng *rand.Rand, x, target, weight []float32) {
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range target {
		target[i] = float32(0.1 * rng.NormFloat64())
	}
	for i := range weight {
		weight[i] = 1
	}
}
