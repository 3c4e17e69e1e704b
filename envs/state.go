package envs

import (
	"fmt"
	"math"
)

// Restorable reports whether obs describes one simulator state: it has the
// task's size, every value is finite and, for tasks whose observations clip
// velocities (hopper and walker2d: ±10), no velocity lies within margin of
// the clip (a clipped velocity leaves the true one unknown).
func (e *Env) Restorable(obs []float32, margin float64) bool {
	t := e.Task
	if e.sim == nil || len(obs) != t.ObsDim {
		return false
	}
	vel := len(e.sim.qpos) - t.obsSkip // index of the first velocity
	for i, v := range obs {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		if t.velClip > 0 && i >= vel && math.Abs(f) >= t.velClip-margin {
			return false
		}
	}
	return true
}

// SetFromObs resets the simulator (which clears MuJoCo's warnings and the
// solver's warm start, so a step never depends on what came before) and
// puts it into the state obs describes. The observation holds qpos without
// its leading root coordinates (the x, or x and y, position) and all of
// qvel; the left-out coordinates are set to 0, which does not change these
// tasks' dynamics (nothing varies along the floor). It fails for an
// observation that is not Restorable (margin 0).
func (e *Env) SetFromObs(obs []float32) error {
	if e.sim == nil {
		return errClosed
	}
	if !e.Restorable(obs, 0) {
		return fmt.Errorf("envs: %s: a %d-value observation with non-finite values or clipped velocities does not describe a state",
			e.Task.Name, len(obs))
	}
	e.Reset(0)
	nq, nv, skip := len(e.sim.qpos), len(e.sim.qvel), e.Task.obsSkip
	qpos, qvel := make([]float64, nq), make([]float64, nv)
	for i := skip; i < nq; i++ {
		qpos[i] = float64(obs[i-skip])
	}
	for i := range qvel {
		qvel[i] = float64(obs[nq-skip+i])
	}
	return e.SetState(qpos, qvel)
}
