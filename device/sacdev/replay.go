package sacdev

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/device"
)

// Replay is a fixed set of transitions on the device (e.g. an offline
// data set), from which Learner.Sample gathers batches by index, so an
// update uploads only the indices and the noise.
type Replay struct {
	d                          device.Device
	rows, obsDim, actDim       int
	obs, act, rew, term, nextO device.Buffer
}

// NewReplay uploads rows transitions: obs, nextObs [rows·obsDim], act
// [rows·actDim], rew, terminal [rows].
func NewReplay(d device.Device, obsDim, actDim int, obs, act, rew, terminal, nextObs []float32) (*Replay, error) {
	rows := len(rew)
	if obsDim < 1 || actDim < 1 || rows < 1 || len(obs) != rows*obsDim || len(nextObs) != rows*obsDim ||
		len(act) != rows*actDim || len(terminal) != rows {
		return nil, fmt.Errorf("sacdev: replay: %d rewards with %d obs, %d next obs, %d actions, %d terminal flags (obs %d, act %d)",
			rows, len(obs), len(nextObs), len(act), len(terminal), obsDim, actDim)
	}
	r := &Replay{d: d, rows: rows, obsDim: obsDim, actDim: actDim}
	for _, x := range []struct {
		dst *device.Buffer
		src []float32
	}{{&r.obs, obs}, {&r.act, act}, {&r.rew, rew}, {&r.term, terminal}, {&r.nextO, nextObs}} {
		b, err := d.Alloc(device.Float32, len(x.src))
		if err != nil {
			_ = r.Close()
			return nil, fmt.Errorf("sacdev: replay: %w", err)
		}
		*x.dst = b
		if err := d.Upload(b, x.src); err != nil {
			_ = r.Close()
			return nil, fmt.Errorf("sacdev: replay: %w", err)
		}
	}
	return r, nil
}

// Rows returns the number of transitions.
func (r *Replay) Rows() int { return r.rows }

// Close frees the replay's buffers.
func (r *Replay) Close() error {
	var errs []error
	for _, b := range []device.Buffer{r.obs, r.act, r.rew, r.term, r.nextO} {
		if b != nil {
			errs = append(errs, r.d.Free(b))
		}
	}
	r.obs, r.act, r.rew, r.term, r.nextO = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// Sample makes rows idx [Batch] of r the next Update's batch, with the
// noise epsNext and eps [Batch·ActDim] (see Batch). An index outside r
// gives NaN rows (gather_rows), which show in every loss.
func (l *Learner) Sample(r *Replay, idx []int32, epsNext, eps []float32) error {
	b, od, ad := l.cfg.Batch, l.cfg.ObsDim, l.cfg.ActDim
	if r.d != l.d || r.obsDim != od || r.actDim != ad {
		return fmt.Errorf("sacdev: sample: replay of obs %d, act %d on %s for a learner of obs %d, act %d on %s",
			r.obsDim, r.actDim, r.d.Name(), od, ad, l.d.Name())
	}
	if len(idx) != b || len(epsNext) != b*ad || len(eps) != b*ad {
		return fmt.Errorf("sacdev: sample: %d indices, %d and %d noise values for batch %d × %d actions",
			len(idx), len(epsNext), len(eps), b, ad)
	}
	if err := l.d.UploadInt32(l.idx, idx); err != nil {
		return fmt.Errorf("sacdev: sample: %w", err)
	}
	if err := l.d.Upload(l.epsNext, epsNext); err != nil {
		return fmt.Errorf("sacdev: sample: %w", err)
	}
	if err := l.d.Upload(l.eps, eps); err != nil {
		return fmt.Errorf("sacdev: sample: %w", err)
	}
	for _, x := range []struct {
		name     string
		dst, src device.Buffer
		cols     int
	}{{"obs", l.obs, r.obs, od}, {"act", l.act, r.act, ad}, {"rew", l.rew, r.rew, 1},
		{"terminal", l.term, r.term, 1}, {"next_obs", l.nextObs, r.nextO, od}} {
		if err := l.d.Launch("gather_rows", b*x.cols, x.dst, x.src, l.idx, x.cols, r.rows); err != nil {
			return fmt.Errorf("sacdev: sample %s: %w", x.name, err)
		}
	}
	return nil
}
