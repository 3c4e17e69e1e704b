package train

import (
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/buffer"
	dev "github.com/admpo/admpo/device"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/sac"
)

// DeviceTiming is BenchDeviceUpdate's medians in milliseconds per SAC
// update on a device.
type DeviceTiming struct {
	Device string
	Name   string // the device's own name (the GPU's)
	// Update is the learner's update alone on the batch already on the
	// device, waited for (device.Sync).
	Update float64
	// RunPath is an update as a run does it through sac.Agent: the noise
	// drawn on the host, batch and noise uploaded, the update, waited for
	// (device.Sync) so that it is timed. The losses are not read back: a
	// run reads them only when it logs or writes a checkpoint
	// (sac.Agent.LastStats), and does not wait after each update.
	RunPath float64
	// GraphUpdate and GraphRunPath are the same with the update recorded
	// once as a device graph and replayed (GraphEnv); 0 where the device
	// cannot record graphs.
	GraphUpdate, GraphRunPath float64
	// ADMStep is the ADM train step alone on a batch already on the device
	// (dynamics.BenchADMTrainStepOn: m 5, batch 256, 3x200 GRU, 4
	// ResBlocks), waited for; ADMFitPath a step as a fit takes it (upload,
	// step, waited for; the loss stays on the device). ADMGraphStep and
	// ADMGraphFitPath are the same with the step recorded once as a device
	// graph and replayed (0 where the device cannot record graphs). Zero
	// unless BenchDeviceUpdate was asked for them.
	ADMStep, ADMFitPath, ADMGraphStep, ADMGraphFitPath float64
	// EnsStep, EnsFitPath, EnsGraphStep and EnsGraphFitPath are the same
	// for the ensemble's train step (dynamics.BenchEnsembleTrainStepOn:
	// seven 4x200 members, batch 256 each).
	EnsStep, EnsFitPath, EnsGraphStep, EnsGraphFitPath float64
}

// BenchDeviceUpdate times SAC updates on the named device (emu or cuda) at
// the sizes of sac.BenchUpdate (obs 11, act 3, 256x256, batch 256): iters
// timed updates of each kind after a few warm-up ones, without and (where
// the device can record them) with a device graph; with adm, also the ADM's
// and the ensemble's train steps (DeviceTiming.ADMStep, EnsStep), each on a
// freshly opened device.
func BenchDeviceUpdate(device string, iters int, adm bool) (DeviceTiming, error) {
	tm := DeviceTiming{Device: device}
	if iters <= 0 {
		return tm, fmt.Errorf("train: bench: iters %d must be positive", iters)
	}
	name, capturer, err := benchDeviceUpdate(device, iters, false, &tm.Update, &tm.RunPath)
	if err != nil {
		return tm, err
	}
	tm.Name = name
	if capturer {
		if _, _, err := benchDeviceUpdate(device, iters, true, &tm.GraphUpdate, &tm.GraphRunPath); err != nil {
			return tm, fmt.Errorf("%w (with a device graph)", err)
		}
	}
	if adm {
		for _, graph := range []bool{false, true} {
			if graph && !capturer {
				break
			}
			at, err := benchDeviceModel(device, iters, graph, dynamics.BenchADMTrainStepOn)
			if err != nil {
				return tm, err
			}
			et, err := benchDeviceModel(device, iters, graph, dynamics.BenchEnsembleTrainStepOn)
			if err != nil {
				return tm, err
			}
			if graph {
				tm.ADMGraphStep, tm.ADMGraphFitPath = at.Step, at.FitPath
				tm.EnsGraphStep, tm.EnsGraphFitPath = et.Step, et.FitPath
			} else {
				tm.ADMStep, tm.ADMFitPath = at.Step, at.FitPath
				tm.EnsStep, tm.EnsFitPath = et.Step, et.FitPath
			}
		}
	}
	return tm, nil
}

// benchDeviceModel times a model's train step (bench: the ADM's or the
// ensemble's) on a freshly opened device.
func benchDeviceModel(device string, iters int, graph bool,
	bench func(dev.Device, int, bool) (dynamics.DeviceStepTiming, error)) (dynamics.DeviceStepTiming, error) {
	d, err := openDevice(device)
	if err != nil {
		return dynamics.DeviceStepTiming{}, err
	}
	tm, err := bench(d, iters, graph)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing %s: %w", device, cerr)
	}
	if err != nil {
		return tm, fmt.Errorf("train: bench on %s: %w", device, err)
	}
	return tm, nil
}

// benchDeviceUpdate times one learner on a freshly opened device into
// update and runPath, and reports the device's name and whether it can
// record graphs.
func benchDeviceUpdate(device string, iters int, graph bool, update, runPath *float64) (string, bool, error) {
	const obsDim, actDim = 11, 3
	cfg := sac.DefaultConfig(actDim)
	s, err := sac.New(obsDim, []float64{-1, -1, -1}, []float64{1, 1, 1}, cfg)
	if err != nil {
		return "", false, err
	}
	defer s.Close()
	d, err := openDevice(device)
	if err != nil {
		return "", false, err
	}
	if d == nil {
		return "", false, fmt.Errorf("train: bench: device %q is not a device learner (emu or cuda)", device)
	}
	_, capturer := d.(dev.Capturer)
	dl, err := newDevLearnerOn(d, device, s, graph)
	if err != nil {
		return "", false, err
	}
	defer dl.Close()
	rng := rand.New(rand.NewSource(7))
	s.SetRand(rand.New(rand.NewSource(8)))
	b := buffer.NewBatch(cfg.BatchSize, obsDim, actDim)
	for _, v := range [][]float32{b.Obs, b.NextObs, b.Rew} {
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
	}
	for i := range b.Act {
		b.Act[i] = float32(2*rng.Float64() - 1)
	}
	median := func(f func() error) (float64, error) { return stats.MedianMillis(3, iters, f) }
	if *runPath, err = median(func() error {
		if _, err := s.Update(b); err != nil {
			return err
		}
		return dl.d.Sync()
	}); err != nil {
		return "", false, fmt.Errorf("train: bench on %s: %w", device, err)
	}
	if *update, err = median(func() error {
		if err := dl.l.Update(); err != nil {
			return err
		}
		return dl.d.Sync()
	}); err != nil {
		return "", false, fmt.Errorf("train: bench on %s: %w", device, err)
	}
	return dl.d.Name(), capturer, nil
}
