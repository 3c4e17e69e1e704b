package experiments

import (
	"fmt"

	"github.com/admpo/admpo/envs"
)

// TrueStepper is the ground truth for one-step model errors: it sets a
// MuJoCo task to the state an observation describes (Env.SetFromObs) and
// steps an action. For tasks that clip velocities, an observation with any
// |v| at the clip value is not restorable (Restorable reports false) and
// must be skipped.
type TrueStepper struct {
	env *envs.Env
	act []float64
}

// NewTrueStepper opens the named task.
func NewTrueStepper(task string) (*TrueStepper, error) {
	env, err := envs.Make(task)
	if err != nil {
		return nil, err
	}
	env.Reset(0)
	return &TrueStepper{env: env, act: make([]float64, env.Task.ActDim)}, nil
}

// Task is the stepped task.
func (t *TrueStepper) Task() *envs.Task { return t.env.Task }

// Close frees the simulator.
func (t *TrueStepper) Close() { t.env.Close() }

// Restorable reports whether obs describes one simulator state
// (Env.Restorable with no margin).
func (t *TrueStepper) Restorable(obs []float32) bool { return t.env.Restorable(obs, 0) }

// Set puts the simulator into the state obs describes (Env.SetFromObs).
func (t *TrueStepper) Set(obs []float32) error {
	if err := t.env.SetFromObs(obs); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return nil
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
