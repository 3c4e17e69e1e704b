package experiments

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/envs"
)

// velocityClip lists the tasks whose observations clip the velocities
// (Gymnasium v4 hopper and walker2d: clip(qvel, ±10)). A clipped observation
// does not determine the simulator state, so it cannot be restored.
var velocityClip = map[string]float64{"hopper": 10, "walker2d": 10}

// TrueStepper is the ground truth for one-step model errors: it sets a
// MuJoCo task to the state an observation describes and steps an action.
//
// The observation leaves out the leading qpos entries (the root x, and y for
// ant and humanoid). These tasks' dynamics do not depend on them (no body
// interacts with anything that varies along the floor), so they are set to
// 0. Velocities come from the observation's qvel part; for tasks that clip
// them, an observation with any |v| >= the clip value is not restorable
// (Restorable reports false) and must be skipped.
type TrueStepper struct {
	env          *envs.Env
	skip, nq, nv int
	clip         float64
	qpos, qvel   []float64
	act          []float64
}

// NewTrueStepper opens the named task.
func NewTrueStepper(task string) (*TrueStepper, error) {
	env, err := envs.Make(task)
	if err != nil {
		return nil, err
	}
	env.Reset(0)
	nq, nv := len(env.QPos()), len(env.QVel())
	skip := nq + nv - env.Task.ObsDim
	if skip < 0 || skip > nq {
		env.Close()
		return nil, fmt.Errorf("experiments: %s has %d qpos, %d qvel and a %d-d observation", task, nq, nv, env.Task.ObsDim)
	}
	return &TrueStepper{env: env, skip: skip, nq: nq, nv: nv, clip: velocityClip[env.Task.Name],
		qpos: make([]float64, nq), qvel: make([]float64, nv), act: make([]float64, env.Task.ActDim)}, nil
}

// Task is the stepped task.
func (t *TrueStepper) Task() *envs.Task { return t.env.Task }

// Close frees the simulator.
func (t *TrueStepper) Close() { t.env.Close() }

// Restorable reports whether obs describes one simulator state: every value
// finite and, for tasks that clip velocities, every |v| below the clip.
func (t *TrueStepper) Restorable(obs []float32) bool {
	if len(obs) != t.env.Task.ObsDim {
		return false
	}
	for i, v := range obs {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		if t.clip > 0 && i >= t.nq-t.skip && math.Abs(f) >= t.clip {
			return false
		}
	}
	return true
}

// Set resets the simulator (which clears MuJoCo's warnings and the
// solver's warm start, so a step never depends on the previous call) and
// puts it into the state obs describes, with the skipped root coordinates
// at 0.
func (t *TrueStepper) Set(obs []float32) error {
	if !t.Restorable(obs) {
		return fmt.Errorf("experiments: %s: observation %v cannot be restored (non-finite or clipped velocity)", t.env.Task.Name, obs)
	}
	t.env.Reset(0)
	clear(t.qpos[:t.skip])
	for i := t.skip; i < t.nq; i++ {
		t.qpos[i] = float64(obs[i-t.skip])
	}
	for i := 0; i < t.nv; i++ {
		t.qvel[i] = float64(obs[t.nq-t.skip+i])
	}
	return t.env.SetState(t.qpos, t.qvel)
}

// Step sets the state from obs, applies act and returns the next
// observation (float64, as the task computes it). ok is false when MuJoCo
// flagged the step (NaN, Inf or huge values: it then resets the state, so
// the observation is not the true next one).
func (t *TrueStepper) Step(obs, act []float32) (next []float64, ok bool, err error) {
	if err := t.Set(obs); err != nil {
		return nil, false, err
	}
	if len(act) != len(t.act) {
		return nil, false, fmt.Errorf("experiments: %s: action has %d values, want %d", t.env.Task.Name, len(act), len(t.act))
	}
	for i, v := range act {
		t.act[i] = float64(v)
	}
	st, err := t.env.Step(t.act)
	if err != nil {
		return nil, false, fmt.Errorf("experiments: %s true step: %w", t.env.Task.Name, err)
	}
	// Terminated fires for unhealthy states and for MuJoCo warnings; a
	// healthy state after the step means it was a warning.
	bad := st.Terminated && t.env.Healthy()
	return st.Obs, !bad, nil
}
