package envs

import (
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/internal/stats"
)

// Actor chooses actions in a task: every policy admpo plays (SAC's actor,
// an exported ONNX actor, a deployed bundle on either runtime, the uniform
// random policy) is one, directly or through a small adapter.
//
// Observations are float32 (the networks' precision and the data sets'
// layout); actions are float64, as the env applies them.
type Actor interface {
	// Act writes the action for obs into act, drawing any noise from rng
	// (which deterministic actors and actors with their own source ignore).
	Act(obs []float32, rng *rand.Rand, act []float64) error
}

// UniformActor draws every action uniformly from the action bounds (D4RL's
// "random" data sets, `admpo envs run`).
type UniformActor struct{ Low, High []float64 }

// Act draws a uniform action: Low + U[0,1)·(High−Low), one draw per value.
func (u UniformActor) Act(_ []float32, rng *rand.Rand, act []float64) error {
	if len(act) != len(u.Low) || len(u.High) != len(u.Low) {
		return fmt.Errorf("envs: uniform actor has %d/%d bounds for %d actions", len(u.Low), len(u.High), len(act))
	}
	for i := range act {
		act[i] = u.Low[i] + rng.Float64()*(u.High[i]-u.Low[i])
	}
	return nil
}

// Hooks let a caller watch the steps of Play.
type Hooks struct {
	// BeforeStep, when set, sees each observation acted on and the chosen
	// action (not yet clipped to the bounds) before the env steps with it.
	BeforeStep func(obs []float32, act []float64) error
	// AfterStep, when set, sees each step's result and its next observation
	// in float32 (the one the actor gets next).
	AfterStep func(st Step, next []float32) error
}

// Play runs one episode of a in e from the observation obs (that of the
// reset just done) until termination or the step limit, drawing the
// actor's noise from rng. It returns the episode's return and length.
func Play(e *Env, a Actor, obs []float64, rng *rand.Rand, h Hooks) (ret float64, n int, err error) {
	o32 := Float32(obs)
	act := make([]float64, e.Task.ActDim)
	for {
		if err := a.Act(o32, rng, act); err != nil {
			return ret, n, fmt.Errorf("step %d: %w", n, err)
		}
		if h.BeforeStep != nil {
			if err := h.BeforeStep(o32, act); err != nil {
				return ret, n, fmt.Errorf("step %d: %w", n, err)
			}
		}
		st, err := e.Step(act)
		if err != nil {
			return ret, n, fmt.Errorf("step %d: %w", n, err)
		}
		ret += st.Reward
		n++
		o32 = Float32(st.Obs)
		if h.AfterStep != nil {
			if err := h.AfterStep(st, o32); err != nil {
				return ret, n, fmt.Errorf("step %d: %w", n, err)
			}
		}
		if st.Terminated || st.Truncated {
			return ret, n, nil
		}
	}
}

// EvalConfig configures Evaluate.
type EvalConfig struct {
	// Episodes is the number of episodes (> 0).
	Episodes int
	// Seed gives episode ep's reset seed (Env.Reset). Nil: each episode
	// continues the env's own random source (Env.ResetNext) from the
	// caller's last Env.Seed.
	Seed func(ep int) int64
	// RNG is the actor's noise source for all episodes (nil for actors that
	// draw none).
	RNG *rand.Rand
	// OnStep, when set, is called after every reset and every step with the
	// episode's index and the env (e.g. to render it); an error stops the
	// evaluation.
	OnStep func(ep int, e *Env) error
}

// Returns are the outcome of Evaluate.
type Returns struct {
	Returns []float64 // per episode
	Lengths []int     // steps per episode
	// Mean and Std are the mean and population standard deviation of
	// Returns.
	Mean, Std float64
}

// Evaluate plays cfg.Episodes episodes of a in e, one after another.
func Evaluate(e *Env, a Actor, cfg EvalConfig) (*Returns, error) {
	if cfg.Episodes <= 0 {
		return nil, fmt.Errorf("envs: evaluating %d episodes (want > 0)", cfg.Episodes)
	}
	r := &Returns{Returns: make([]float64, 0, cfg.Episodes), Lengths: make([]int, 0, cfg.Episodes)}
	for ep := 0; ep < cfg.Episodes; ep++ {
		var obs []float64
		if cfg.Seed != nil {
			obs = e.Reset(cfg.Seed(ep))
		} else {
			obs = e.ResetNext()
		}
		if obs == nil {
			return nil, fmt.Errorf("envs: %s episode %d: %w", e.Task.Name, ep, e.Err())
		}
		var h Hooks
		if cfg.OnStep != nil {
			if err := cfg.OnStep(ep, e); err != nil {
				return nil, fmt.Errorf("envs: %s episode %d: %w", e.Task.Name, ep, err)
			}
			h.AfterStep = func(Step, []float32) error { return cfg.OnStep(ep, e) }
		}
		ret, n, err := Play(e, a, obs, cfg.RNG, h)
		if err != nil {
			return nil, fmt.Errorf("envs: %s episode %d %w", e.Task.Name, ep, err)
		}
		r.Returns = append(r.Returns, ret)
		r.Lengths = append(r.Lengths, n)
	}
	r.Mean, r.Std = stats.MeanStd(r.Returns)
	return r, nil
}

// Float32 converts simulator values (observations, states, actions) to the
// float32 of the buffers and networks.
func Float32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
