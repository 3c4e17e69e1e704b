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
	// TaskFile is a task file (envs.LoadTaskFile) to play instead of a
	// built-in task. Without it (and without Task), a bundle trained on a
	// task file plays the file its manifest records, which must not have
	// changed since.
	TaskFile string
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

// Run plays cfg.Episodes episodes of p in its task (or cfg.Task, or
// cfg.TaskFile): a built-in task, a task file, or a remote environment's
// address (tcp://HOST:PORT, unix:///PATH), whose server must be running.
func Run(p *policies.Policy, cfg Config) (*Result, error) {
	if cfg.Episodes <= 0 {
		return nil, fmt.Errorf("evaluate: %d episodes (want > 0)", cfg.Episodes)
	}
	e, err := makeEnv(p, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	task := e.Task.Name
	if e.Task.File == "" { // as named
		if task = cfg.Task; task == "" {
			task = p.Manifest().Task
		}
	}
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
	if _, _, err := datasets.RefScores(task); err == nil && e.Task.File == "" {
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

// makeEnv makes the env Run plays: cfg's task file or task, else the
// bundle's (a task file when its manifest records one); a task that is a
// remote environment's address connects to its server.
func makeEnv(p *policies.Policy, cfg Config) (*envs.Env, error) {
	prov := p.Manifest().Provenance
	file, digest := cfg.TaskFile, ""
	if file == "" && cfg.Task == "" && prov["env_file"] != "" {
		file, digest = prov["env_file"], prov["env_file_sha256"]
	}
	if file != "" {
		t, err := envs.LoadTaskFile(file)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		if digest != "" && t.Digest != digest {
			return nil, fmt.Errorf("evaluate: the task file %s or its model changed since the policy was trained on it (sha256 %s, now %s): give it with --env-file to play it anyway",
				file, digest, t.Digest)
		}
		e, err := envs.MakeTask(t)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		return e, nil
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
		return e, nil
	}
	e, err := envs.Make(task)
	if err != nil {
		return nil, fmt.Errorf("evaluate: the bundle's task %q is not a built-in task (a policy trained on your own data cannot be played here; name a task or a task file): %w", task, err)
	}
	return e, nil
}
