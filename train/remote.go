package train

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
)

// timeout is the remote environment's answer timeout (0: the default).
func (r *RemoteEnv) timeout() time.Duration {
	if r == nil {
		return 0
	}
	return time.Duration(r.TimeoutS * float64(time.Second))
}

// NewRemoteEnv is the record of a remote environment with spec (as its
// server announced it) and the answer timeout. It fails for an unbounded
// action space: SAC squashes its actions into finite bounds.
func NewRemoteEnv(spec envs.BackendSpec, timeout time.Duration) (*RemoteEnv, error) {
	for i := range spec.Low {
		if math.IsInf(spec.Low[i], 0) || math.IsInf(spec.High[i], 0) {
			return nil, fmt.Errorf("train: the environment at %s has an unbounded action space (value %d in [%v, %v]): SAC needs finite action bounds",
				spec.Name, i, spec.Low[i], spec.High[i])
		}
	}
	n := spec.MaxEpisodeSteps
	if n <= 0 {
		n = envs.MaxEpisodeSteps
	}
	return &RemoteEnv{ObsDim: spec.ObsDim, ActDim: spec.ActDim, ActionLow: append([]float64(nil), spec.Low...),
		ActionHigh: append([]float64(nil), spec.High...), MaxEpisodeSteps: n, TimeoutS: timeout.Seconds()}, nil
}

// openEnv opens the run's environment: task (the built-in task or the
// task file, c.Task()), or for a remote environment (task nil) a
// connection to its server, whose spec must be the one the config records
// (a fresh run's config records it here).
func openEnv(c *OnlineConfig, task *envs.Task) (*envs.Env, error) {
	if !c.IsRemote() {
		return envs.MakeTask(task)
	}
	return dialRemote(c.Env, &c.Remote)
}

// dialRemote connects to the remote environment at addr, whose spec must
// be the one *rec records; a nil or empty record (a fresh run's) is set
// to the server's spec.
func dialRemote(addr string, rec **RemoteEnv) (*envs.Env, error) {
	r := *rec
	e, err := remote.Make(addr, r.timeout())
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	got, err := NewRemoteEnv(envs.BackendSpec{Name: addr, ObsDim: e.Task.ObsDim, ActDim: e.Task.ActDim, Low: e.ActionLow(),
		High: e.ActionHigh(), MaxEpisodeSteps: e.MaxSteps()}, r.timeout())
	if err != nil {
		e.Close()
		return nil, err
	}
	if r == nil || r.ObsDim == 0 {
		*rec = got
		return e, nil
	}
	if got.ObsDim != r.ObsDim || got.ActDim != r.ActDim || !slices.Equal(got.ActionLow, r.ActionLow) ||
		!slices.Equal(got.ActionHigh, r.ActionHigh) || got.MaxEpisodeSteps != r.MaxEpisodeSteps {
		e.Close()
		return nil, fmt.Errorf("train: the environment at %s now has %d observation and %d action values in [%v, %v], episodes of up to %d steps; "+
			"the run was started with %d and %d in [%v, %v], %d steps",
			addr, got.ObsDim, got.ActDim, got.ActionLow, got.ActionHigh, got.MaxEpisodeSteps,
			r.ObsDim, r.ActDim, r.ActionLow, r.ActionHigh, r.MaxEpisodeSteps)
	}
	return e, nil
}

// envFailed handles a remote environment's failure at the current env
// step: it writes the checkpoint (the run state is that before the failed
// request) and returns an error that names the server and says how to go
// on. A built-in task's error is returned as it is.
func (o *Online) envFailed(err error) error {
	if !o.Cfg.IsRemote() {
		return err
	}
	if cerr := o.Checkpoint(); cerr != nil {
		return fmt.Errorf("train: the environment server %s failed at env step %d (%w), and the checkpoint failed: %v", o.Cfg.Env, o.step, err, cerr)
	}
	return fmt.Errorf("train: the environment server %s failed at env step %d: %w\ncheckpoint written: once the server is back at %s, continue with: admpo train online --resume %s",
		o.Cfg.Env, o.step, err, o.Cfg.Env, o.Dir)
}

// resumeSeed is the seed a resumed run resets its remote environment with:
// the server's state cannot be restored, so the episode in progress at the
// checkpoint is cut and a new one starts from the run's seed plus the env
// step.
func (c OnlineConfig) resumeSeed(step int) int64 { return c.Seed + int64(step) }
