package envs

import (
	"embed"
	"fmt"
	"math"
	"math/rand"

	"github.com/admpo/admpo/internal/rng"
)

//go:embed assets/*.xml
var assets embed.FS

// Info carries the reward terms and positions of one step.
type Info struct {
	XBefore, XAfter float64 // x position used for the forward reward
	XVelocity       float64 // (XAfter - XBefore) / Dt
	ForwardReward   float64
	HealthyReward   float64
	CtrlCost        float64
}

// Step is the result of Env.Step.
type Step struct {
	Obs        []float64 // owned by the caller (a fresh slice per step)
	Reward     float64
	Terminated bool // the task's termination rule fired
	Truncated  bool // the task's episode limit (Task.EpisodeLimit) was reached
	Info       Info
}

// Env is one running instance of a Task. It is not safe for concurrent use.
type Env struct {
	Task *Task
	sim  *sim
	rng  *rand.Rand
	src  *rng.Source

	low, high []float64
	steps     int
	needReset bool

	// back, when set, plays the episodes in place of the simulator (sim
	// is nil): a remote environment (see NewBackendEnv).
	back *backendState
}

// Make loads the built-in task called name. Call Reset before the first Step.
func Make(name string) (*Env, error) {
	t, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return MakeTask(t)
}

// MakeTask loads a task: a built-in one (Lookup) or one read from a task
// file (LoadTaskFile). Call Reset before the first Step.
func MakeTask(t *Task) (*Env, error) {
	s, err := t.loadModel()
	if err != nil {
		return nil, err
	}
	if s.nu != t.ActDim {
		s.close()
		return nil, fmt.Errorf("envs: %s model has %d actuators, task expects %d", t.Name, s.nu, t.ActDim)
	}
	r, src := rng.New(0)
	e := &Env{Task: t, sim: s, rng: r, src: src, needReset: true,
		low: make([]float64, s.nu), high: make([]float64, s.nu)}
	for i := 0; i < s.nu; i++ {
		if s.ctrlLimited[i] != 0 {
			e.low[i], e.high[i] = s.ctrlRange[2*i], s.ctrlRange[2*i+1]
		} else {
			e.low[i], e.high[i] = math.Inf(-1), math.Inf(1)
		}
	}
	if got := len(s.qpos) - t.obsSkip + len(s.qvel); got != t.ObsDim {
		s.close()
		return nil, fmt.Errorf("envs: %s model gives %d observation values, task expects %d", t.Name, got, t.ObsDim)
	}
	return e, nil
}

// loadModel compiles the task's MJCF model: the task file's, or the
// embedded one under assets/.
func (t *Task) loadModel() (*sim, error) {
	if t.load != nil {
		return t.load()
	}
	xml, err := assets.ReadFile("assets/" + t.Model)
	if err != nil {
		return nil, fmt.Errorf("envs: reading embedded model %s: %w", t.Model, err)
	}
	return loadSim(t.Model, xml)
}

// Close frees the simulator. The Env must not be used afterwards.
func (e *Env) Close() {
	if e.back != nil {
		e.back.close()
		return
	}
	if e.sim != nil {
		e.sim.close()
		e.sim = nil
	}
}

// Dt is the duration of one env step: timestep x frame skip.
// A backend env has none (0).
func (e *Env) Dt() float64 {
	if e.sim == nil {
		return 0
	}
	return e.sim.timestep * float64(e.Task.FrameSkip)
}

// ActionLow returns the lower action bounds (a copy).
func (e *Env) ActionLow() []float64 { return append([]float64(nil), e.low...) }

// ActionHigh returns the upper action bounds (a copy).
func (e *Env) ActionHigh() []float64 { return append([]float64(nil), e.high...) }

// Steps is the number of steps taken in the current episode.
func (e *Env) Steps() int { return e.steps }

// Seed reseeds the env's random source (used by Reset for the initial-state noise).
func (e *Env) Seed(seed int64) {
	if e.back != nil {
		e.back.seed = &seed
		return
	}
	e.rng.Seed(seed)
}

// Reset reseeds the env with seed and starts an episode.
func (e *Env) Reset(seed int64) []float64 {
	e.Seed(seed)
	return e.ResetNext()
}

// ResetNext starts a new episode drawing its noise from the env's random
// source, without reseeding: successive episodes differ but the sequence is
// reproducible from the last Seed.
//
// It returns nil when the env is closed or its backend fails (Err tells
// why).
func (e *Env) ResetNext() []float64 {
	if e.back != nil {
		return e.backReset()
	}
	if e.sim == nil {
		return nil
	}
	e.sim.reset()
	e.Task.resetNoise(e.sim, e.rng)
	e.sim.forward()
	e.steps = 0
	e.needReset = false
	return e.Observation()
}

// Observation returns the current observation (a fresh slice).
// For a backend env: the last observation it returned.
func (e *Env) Observation() []float64 {
	if e.back != nil {
		return append([]float64(nil), e.back.obs...)
	}
	obs := make([]float64, e.Task.ObsDim)
	e.Task.observe(e.sim, obs)
	return obs
}

// QPos returns a copy of the generalised positions.
// (nil without a simulator).
func (e *Env) QPos() []float64 {
	if e.sim == nil {
		return nil
	}
	return append([]float64(nil), e.sim.qpos...)
}

// QVel returns a copy of the generalised velocities (nil without a
// simulator).
func (e *Env) QVel() []float64 {
	if e.sim == nil {
		return nil
	}
	return append([]float64(nil), e.sim.qvel...)
}

// SetState sets qpos and qvel (full, including the x position the
// observation leaves out) and recomputes derived quantities. The episode's
// step counter is kept.
func (e *Env) SetState(qpos, qvel []float64) error {
	if e.sim == nil {
		return errClosed
	}
	if len(qpos) != len(e.sim.qpos) || len(qvel) != len(e.sim.qvel) {
		return fmt.Errorf("envs: %s SetState: got %d qpos and %d qvel, want %d and %d",
			e.Task.Name, len(qpos), len(qvel), len(e.sim.qpos), len(e.sim.qvel))
	}
	if !allFinite64(qpos) || !allFinite64(qvel) {
		return fmt.Errorf("envs: %s SetState: non-finite state", e.Task.Name)
	}
	copy(e.sim.qpos, qpos)
	copy(e.sim.qvel, qvel)
	e.sim.forward()
	e.needReset = false
	return nil
}

// Snapshot is everything needed to continue an episode exactly: the
// physical state, the step counter and the random source.
type Snapshot struct {
	QPos, QVel []float64
	QAccWarm   []float64 // the solver's warm start
	Ctrl       []float64
	Steps      int
	NeedReset  bool
	RNG        []byte
}

// Snapshot captures the env's state for a checkpoint. A backend env's
// state lives in its server: its snapshot holds only the counters, and
// Restore refuses it (a run re-seeds such an env instead).
func (e *Env) Snapshot() (Snapshot, error) {
	if e.back != nil {
		return Snapshot{Steps: e.steps, NeedReset: e.needReset}, nil
	}
	if e.sim == nil {
		return Snapshot{}, errClosed
	}
	b, err := e.src.MarshalBinary()
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{QPos: e.QPos(), QVel: e.QVel(), QAccWarm: append([]float64(nil), e.sim.qaccWarm...),
		Ctrl: append([]float64(nil), e.sim.ctrl...), Steps: e.steps, NeedReset: e.needReset, RNG: b}, nil
}

// Restore puts the env back into a Snapshot's state.
func (e *Env) Restore(s Snapshot) error {
	if e.sim == nil {
		return errClosed
	}
	if len(s.QAccWarm) != len(e.sim.qaccWarm) || len(s.Ctrl) != len(e.sim.ctrl) {
		return fmt.Errorf("envs: %s restore: snapshot has %d warm-start and %d ctrl values, want %d and %d",
			e.Task.Name, len(s.QAccWarm), len(s.Ctrl), len(e.sim.qaccWarm), len(e.sim.ctrl))
	}
	copy(e.sim.ctrl, s.Ctrl)
	if err := e.SetState(s.QPos, s.QVel); err != nil {
		return err
	}
	copy(e.sim.qaccWarm, s.QAccWarm)
	if err := e.src.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("envs: %s restore: %w", e.Task.Name, err)
	}
	e.steps, e.needReset = s.Steps, s.NeedReset
	return nil
}

// Healthy reports whether the current state satisfies the task's health rule.
// A backend env's state is unknown here: false.
func (e *Env) Healthy() bool {
	if e.sim == nil || e.Task.isHealthy == nil {
		return false
	}
	return e.Task.isHealthy(e.sim.qpos, e.sim.qvel)
}

// Step applies action (clipped to the action bounds) for FrameSkip physics
// steps. It fails on a wrong action length, NaN or Inf in the action, or a
// step after the episode ended.
func (e *Env) Step(action []float64) (Step, error) {
	if e.back != nil {
		return e.backStep(action)
	}
	if e.sim == nil {
		return Step{}, errClosed
	}
	if e.needReset {
		return Step{}, fmt.Errorf("envs: %s: Step called before Reset or after the episode ended", e.Task.Name)
	}
	if len(action) != e.Task.ActDim {
		return Step{}, fmt.Errorf("envs: %s: action has %d values, want %d", e.Task.Name, len(action), e.Task.ActDim)
	}
	var sq float64
	for i, a := range action {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return Step{}, fmt.Errorf("envs: %s: action[%d] is %v", e.Task.Name, i, a)
		}
		a = math.Max(e.low[i], math.Min(e.high[i], a))
		e.sim.ctrl[i] = a
		sq += a * a
	}
	t := e.Task
	xBefore := t.xPosition(e.sim)
	e.sim.step(t.FrameSkip)
	xAfter := t.xPosition(e.sim)
	e.steps++

	dt := e.Dt()
	info := Info{XBefore: xBefore, XAfter: xAfter, XVelocity: (xAfter - xBefore) / dt}
	info.ForwardReward = t.Forward * info.XVelocity
	info.HealthyReward = t.Healthy
	info.CtrlCost = t.CtrlCost * sq
	st := Step{Obs: e.Observation(), Info: info}
	st.Reward = info.ForwardReward + info.HealthyReward - info.CtrlCost + t.constant
	st.Terminated = !t.isHealthy(e.sim.qpos, e.sim.qvel) || e.sim.badState()
	st.Truncated = e.steps >= t.EpisodeLimit()
	if st.Terminated || st.Truncated {
		e.needReset = true
	}
	return st, nil
}
