package envs

import (
	"fmt"
	"math"
)

// Backend is an environment that an Env plays in place of its MuJoCo
// simulator: a remote environment (package envs/remote) or any other
// implementation of the Gymnasium API. Observations and actions are flat
// float64 vectors of the sizes given to NewBackendEnv.
type Backend interface {
	// Reset starts an episode; seed is nil to continue the backend's own
	// random source (Gymnasium's reset(seed=None)).
	Reset(seed *int64) (obs []float64, err error)
	// Step applies one action.
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool, err error)
	// Close frees the backend.
	Close() error
}

// BackendSpec is what NewBackendEnv needs to know of a backend.
type BackendSpec struct {
	Name            string    // the task's name (a remote env's address)
	ObsDim, ActDim  int       // flat observation and action sizes
	Low, High       []float64 // action bounds (±Inf where unbounded)
	MaxEpisodeSteps int       // episodes are truncated after this many steps (0: MaxEpisodeSteps)
}

// backendState is a backend env's part of Env.
type backendState struct {
	b        Backend
	seed     *int64 // the seed the next reset passes, set by Seed
	obs      []float64
	maxSteps int
	err      error // why the last reset failed
}

func (b *backendState) close() {
	if b.b != nil {
		b.b.Close()
		b.b = nil
	}
}

// NewBackendEnv returns an Env that plays b's episodes. Its Task has the
// spec's name and sizes and no termination rule (Task.Done is nil): the
// backend decides when its episodes end. The Env owns b (Close closes
// it). Simulator methods (QPos, SetState, SetFromObs, Restore, rendering)
// fail or return nothing.
func NewBackendEnv(spec BackendSpec, b Backend) (*Env, error) {
	if spec.ObsDim <= 0 || spec.ActDim <= 0 {
		return nil, fmt.Errorf("envs: %s: %d observation and %d action values (want > 0)", spec.Name, spec.ObsDim, spec.ActDim)
	}
	if len(spec.Low) != spec.ActDim || len(spec.High) != spec.ActDim {
		return nil, fmt.Errorf("envs: %s: %d/%d action bounds for %d action values", spec.Name, len(spec.Low), len(spec.High), spec.ActDim)
	}
	for i := range spec.Low {
		if math.IsNaN(spec.Low[i]) || math.IsNaN(spec.High[i]) || !(spec.Low[i] <= spec.High[i]) {
			return nil, fmt.Errorf("envs: %s: action bounds [%v, %v] of value %d are not an interval", spec.Name, spec.Low[i], spec.High[i], i)
		}
	}
	n := spec.MaxEpisodeSteps
	if n <= 0 {
		n = MaxEpisodeSteps
	}
	t := &Task{Name: spec.Name, ObsDim: spec.ObsDim, ActDim: spec.ActDim, Summary: "backend environment", MaxSteps: n}
	return &Env{Task: t, needReset: true, low: append([]float64(nil), spec.Low...), high: append([]float64(nil), spec.High...),
		back: &backendState{b: b, maxSteps: n}}, nil
}

// IsBackend reports whether e plays a Backend instead of a simulator.
func (e *Env) IsBackend() bool { return e.back != nil }

// MaxSteps is the episode limit: the task's (Task.EpisodeLimit;
// MaxEpisodeSteps for the built-in tasks), the spec's for a backend env.
func (e *Env) MaxSteps() int {
	if e.back != nil {
		return e.back.maxSteps
	}
	return e.Task.EpisodeLimit()
}

// Err is why the last Reset or ResetNext returned nil: the backend's
// error, or the env being closed.
func (e *Env) Err() error {
	if e.back != nil && e.back.err != nil {
		return e.back.err
	}
	return errClosed
}

func (e *Env) backReset() []float64 {
	bs := e.back
	if bs.b == nil {
		bs.err = errClosed
		return nil
	}
	seed := bs.seed
	bs.seed = nil
	obs, err := bs.b.Reset(seed)
	if err == nil {
		err = e.checkObs(obs, "reset")
	}
	if err != nil {
		bs.err = err
		e.needReset = true
		return nil
	}
	bs.err = nil
	bs.obs = obs
	e.steps, e.needReset = 0, false
	return append([]float64(nil), obs...)
}

// checkObs fails for an observation of the wrong size or with a value
// that is not finite.
func (e *Env) checkObs(obs []float64, what string) error {
	if len(obs) != e.Task.ObsDim {
		return fmt.Errorf("envs: %s: %s gave a %d-value observation, the observation space has %d", e.Task.Name, what, len(obs), e.Task.ObsDim)
	}
	for i, v := range obs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("envs: %s: %s gave observation[%d] = %v", e.Task.Name, what, i, v)
		}
	}
	return nil
}

func (e *Env) backStep(action []float64) (Step, error) {
	bs := e.back
	if bs.b == nil {
		return Step{}, errClosed
	}
	if e.needReset {
		return Step{}, fmt.Errorf("envs: %s: Step called before Reset or after the episode ended", e.Task.Name)
	}
	if len(action) != e.Task.ActDim {
		return Step{}, fmt.Errorf("envs: %s: action has %d values, want %d", e.Task.Name, len(action), e.Task.ActDim)
	}
	act := make([]float64, len(action))
	for i, a := range action {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return Step{}, fmt.Errorf("envs: %s: action[%d] is %v", e.Task.Name, i, a)
		}
		act[i] = math.Max(e.low[i], math.Min(e.high[i], a))
	}
	obs, rew, term, trunc, err := bs.b.Step(act)
	if err != nil {
		return Step{}, err
	}
	if err := e.checkObs(obs, fmt.Sprintf("step %d", e.steps+1)); err != nil {
		return Step{}, err
	}
	if math.IsNaN(rew) || math.IsInf(rew, 0) {
		return Step{}, fmt.Errorf("envs: %s: step %d gave reward %v", e.Task.Name, e.steps+1, rew)
	}
	e.steps++
	bs.obs = obs
	st := Step{Obs: append([]float64(nil), obs...), Reward: rew, Terminated: term, Truncated: trunc || e.steps >= bs.maxSteps}
	if st.Terminated || st.Truncated {
		e.needReset = true
	}
	return st, nil
}
