package evaluate

import (
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/policies"
)

// Config configures Run.
type Config struct {
	// Task is the task to play; "" means the bundle's own task.
	Task string
	// Episodes is the number of episodes (> 0); episode i starts from the
	// task's reset with seed Seed+i.
	Episodes int
	Seed     int64
	// Stochastic samples actions (from the policy's seeded RNG) instead of
	// taking the deterministic mean action.
	Stochastic bool
	// OnStep, when set, is called after every reset and every step with the
	// episode's index and the task's env (e.g. to render it); an error
	// stops the evaluation.
	OnStep func(episode int, e *envs.Env) error
	// Timeout bounds a remote environment's connection and answers (0:
	// remote.DefaultTimeout).
	Timeout time.Duration
}

// Result is an evaluation's outcome.
type Result struct {
	Task       string    `json:"task"`
	Runtime    string    `json:"runtime"`
	Episodes   int       `json:"episodes"`
	Seed       int64     `json:"seed"`
	Stochastic bool      `json:"stochastic"`
	Returns    []float64 `json:"returns"`
	Lengths    []int     `json:"lengths"`
	// ReturnMean and ReturnStd are the mean and population standard
	// deviation of Returns.
	ReturnMean float64 `json:"return_mean"`
	ReturnStd  float64 `json:"return_std"`
	// Score is the D4RL normalised score (100·(return − random)/(expert −
	// random)) of the episodes; nil for tasks without reference scores.
	Score *Score `json:"normalized_score,omitempty"`
}

// Score is the mean and population standard deviation of the episodes'
// normalised scores.
type Score struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// Run plays cfg.Episodes episodes of p in its task (or cfg.Task): a
// built-in task, or a remote environment's address (tcp://HOST:PORT,
// unix:///PATH), whose server must be running.
func Run(p *policies.Policy, cfg Config) (*Result, error) {
	if cfg.Episodes <= 0 {
		return nil, fmt.Errorf("evaluate: %d episodes (want > 0)", cfg.Episodes)
	}
	task := cfg.Task
	if task == "" {
		task = p.Manifest().Task
	}
	if task == "" {
		return nil, errors.New("evaluate: the bundle names no task: give one")
	}
	if remote.IsAddress(task) {
		e, err := remote.Make(task, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		return play(p, e, task, cfg)
	}
	e, err := envs.Make(task)
	if err != nil {
		return nil, fmt.Errorf("evaluate: the bundle's task %q is not a built-in task (a policy trained on your own data cannot be played here; name a task): %w", task, err)
	}
	return play(p, e, task, cfg)
}

// play runs the evaluation in e (closed at the end).
func play(p *policies.Policy, e *envs.Env, task string, cfg Config) (*Result, error) {
	defer e.Close()
	if e.Task.ObsDim != p.ObsDim() || e.Task.ActDim != p.ActDim() {
		return nil, fmt.Errorf("evaluate: task %s has %d observation and %d action values, the policy %d and %d",
			task, e.Task.ObsDim, e.Task.ActDim, p.ObsDim(), p.ActDim())
	}
	r := &Result{Task: task, Runtime: p.Runtime(), Episodes: cfg.Episodes, Seed: cfg.Seed, Stochastic: cfg.Stochastic}
	rets, err := envs.Evaluate(e, &policyActor{P: p, Stochastic: cfg.Stochastic}, envs.EvalConfig{Episodes: cfg.Episodes,
		Seed: func(ep int) int64 { return cfg.Seed + int64(ep) }, OnStep: cfg.OnStep})
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	r.Returns, r.Lengths, r.ReturnMean, r.ReturnStd = rets.Returns, rets.Lengths, rets.Mean, rets.Std
	if _, _, err := datasets.RefScores(task); err == nil {
		scores := make([]float64, len(r.Returns))
		for i, ret := range r.Returns {
			scores[i], _ = datasets.NormalizedScore(task, ret)
		}
		m, s := stats.MeanStd(scores)
		r.Score = &Score{Mean: m, Std: s}
	}
	return r, nil
}

// policyActor is a deployed policy as an envs.Actor: its mean action, or
// when Stochastic a sample drawn from the policy's own seeded source (the
// rng Act is given is not used).
type policyActor struct {
	P          *policies.Policy
	Stochastic bool
	a32        []float32
}

// Act runs the policy on one observation.
func (a *policyActor) Act(obs []float32, _ *rand.Rand, act []float64) error {
	if a.a32 == nil {
		a.a32 = make([]float32, a.P.ActDim())
	}
	if err := a.P.ActInto(a.a32, obs, a.Stochastic); err != nil {
		return err
	}
	for i, v := range a.a32 {
		act[i] = float64(v)
	}
	return nil
}
