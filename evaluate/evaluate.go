package evaluate

import (
	"errors"
	"fmt"
	"math"
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
	// Copies is how many episodes a remote environment plays at once when
	// its server offers batches of env copies (docs/remote-envs.md): the
	// policy acts on their observations as one batch and one request steps
	// them all. 0: up to DefaultCopies (at most Episodes); 1: one episode at
	// a time, one copy per request. Stochastic evaluations and OnStep play
	// one at a time.
	Copies int
}

// DefaultCopies is the most env copies an evaluation asks a remote
// environment's server for when Config.Copies is 0.
const DefaultCopies = 64

// Result is an evaluation's outcome.
type Result struct {
	Task       string    `json:"task"`
	Runtime    string    `json:"runtime"`
	Episodes   int       `json:"episodes"`
	Seed       int64     `json:"seed"`
	Stochastic bool      `json:"stochastic"`
	Returns    []float64 `json:"returns"`
	Lengths    []int     `json:"lengths"`
	// Copies is how many episodes ran at once (a remote environment's
	// batches of env copies; 1 otherwise).
	Copies int `json:"env_copies"`
	// Steps is the env steps of all episodes and Seconds the time they
	// took (resets included; connecting not).
	Steps   int     `json:"env_steps"`
	Seconds float64 `json:"seconds"`
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
	if cfg.Copies < 0 || cfg.Copies > remote.MaxCopies {
		return nil, fmt.Errorf("evaluate: %d env copies (want 0 to %d)", cfg.Copies, remote.MaxCopies)
	}
	if addr := remoteTask(p, cfg); addr != "" && cfg.Copies != 1 && cfg.Episodes > 1 && !cfg.Stochastic && cfg.OnStep == nil {
		c, err := remote.Dial(addr, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		want := cfg.Copies
		if want == 0 {
			want = DefaultCopies
		}
		k, err := c.Copies(min(want, cfg.Episodes))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		if k >= 2 {
			defer c.Close()
			return runBatched(p, c, k, addr, cfg)
		}
		e, err := envs.NewBackendEnv(c.Spec, c) // no batches: one episode at a time on this connection
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("evaluate: %s: %w", addr, err)
		}
		return runOn(p, e, cfg)
	}
	e, err := makeEnv(p, cfg)
	if err != nil {
		return nil, err
	}
	return runOn(p, e, cfg)
}

// runOn plays cfg's episodes one at a time on e, and closes it.
func runOn(p *policies.Policy, e *envs.Env, cfg Config) (*Result, error) {
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
	start := time.Now()
	rets, err := envs.Evaluate(e, &policyActor{P: p, Stochastic: cfg.Stochastic}, envs.EvalConfig{Episodes: cfg.Episodes,
		Seed: func(ep int) int64 { return cfg.Seed + int64(ep) }, OnStep: cfg.OnStep})
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return result(p, task, e.Task.File == "", cfg, rets.Returns, rets.Lengths, 1, time.Since(start)), nil
}

// result is the Result of the episodes' returns and lengths; scored says
// whether the task's D4RL reference scores apply (not for a task file).
func result(p *policies.Policy, task string, scored bool, cfg Config, returns []float64, lengths []int, copies int, took time.Duration) *Result {
	r := &Result{Task: task, Runtime: p.Runtime(), Episodes: cfg.Episodes, Seed: cfg.Seed, Stochastic: cfg.Stochastic,
		Returns: returns, Lengths: lengths, Copies: copies, Seconds: took.Seconds()}
	for _, n := range lengths {
		r.Steps += n
	}
	r.ReturnMean, r.ReturnStd = stats.MeanStd(returns)
	if _, _, err := datasets.RefScores(task); err == nil && scored {
		scores := make([]float64, len(r.Returns))
		for i, ret := range r.Returns {
			scores[i], _ = datasets.NormalizedScore(task, ret)
		}
		m, s := stats.MeanStd(scores)
		r.Score = &Score{Mean: m, Std: s}
	}
	return r
}

// remoteTask is the remote environment's address Run plays, or "" when it
// plays a built-in task or a task file.
func remoteTask(p *policies.Policy, cfg Config) string {
	if cfg.TaskFile != "" || cfg.Task == "" && p.Manifest().Provenance["env_file"] != "" {
		return ""
	}
	task := cfg.Task
	if task == "" {
		task = p.Manifest().Task
	}
	if remote.IsAddress(task) {
		return task
	}
	return ""
}

// runBatched plays cfg's episodes on the k env copies of c at once:
// episode i resets with seed Seed+i on a free copy, the policy acts
// deterministically on the running copies' observations as one batch, one
// request steps them, and a copy whose episode ends starts the next. With
// the same actions each episode is the one a single copy plays; the
// client's checks are a single env's (actions clipped to the bounds,
// observations of the spec's size and finite, finite rewards, episodes cut
// at the server's time limit).
func runBatched(p *policies.Policy, c *remote.Client, k int, addr string, cfg Config) (*Result, error) {
	spec := c.Spec
	od, ad := spec.ObsDim, spec.ActDim
	if od != p.ObsDim() || ad != p.ActDim() {
		return nil, fmt.Errorf("evaluate: task %s has %d observation and %d action values, the policy %d and %d", addr, od, ad, p.ObsDim(), p.ActDim())
	}
	limit := spec.MaxEpisodeSteps
	if limit <= 0 {
		limit = envs.MaxEpisodeSteps
	}
	type slot struct {
		ep, n int
		ret   float64
		obs   []float64
	}
	start := time.Now()
	returns, lengths := make([]float64, cfg.Episodes), make([]int, cfg.Episodes)
	slots := make([]*slot, k) // nil: idle
	next := 0
	checkObs := func(s *slot, what string) error {
		for i, v := range s.obs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("evaluate: %s episode %d: %s gave observation[%d] = %v", addr, s.ep, what, i, v)
			}
		}
		return nil
	}
	startEpisodes := func(copies []int) error {
		if len(copies) == 0 {
			return nil
		}
		seeds := make([]*int64, len(copies))
		for i, cp := range copies {
			seed := cfg.Seed + int64(next)
			seeds[i] = &seed
			slots[cp] = &slot{ep: next}
			next++
		}
		obs, err := c.ResetBatch(copies, seeds)
		if err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		for i, cp := range copies {
			slots[cp].obs = obs[i]
			if err := checkObs(slots[cp], "reset"); err != nil {
				return err
			}
		}
		return nil
	}
	first := make([]int, min(k, cfg.Episodes))
	for i := range first {
		first[i] = i
	}
	if err := startEpisodes(first); err != nil {
		return nil, err
	}
	var idx []int
	obs32 := make([]float32, 0, k*od)
	out := make([]float32, k*ad)
	for {
		idx, obs32 = idx[:0], obs32[:0]
		for cp, s := range slots {
			if s != nil {
				idx = append(idx, cp)
				for _, v := range s.obs {
					obs32 = append(obs32, float32(v))
				}
			}
		}
		if len(idx) == 0 {
			break
		}
		if err := p.ActInto(out[:len(idx)*ad], obs32, false); err != nil {
			return nil, fmt.Errorf("evaluate: %s: %w", addr, err)
		}
		acts := make([][]float64, len(idx))
		for i := range idx {
			a := make([]float64, ad)
			for j := range a {
				a[j] = math.Max(spec.Low[j], math.Min(spec.High[j], float64(out[i*ad+j])))
			}
			acts[i] = a
		}
		res, err := c.StepBatch(idx, acts)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		var restart []int
		for i, cp := range idx {
			s, st := slots[cp], res[i]
			s.n++
			s.obs = st.Obs
			if err := checkObs(s, fmt.Sprintf("step %d", s.n)); err != nil {
				return nil, err
			}
			if math.IsNaN(st.Reward) || math.IsInf(st.Reward, 0) {
				return nil, fmt.Errorf("evaluate: %s episode %d: step %d gave reward %v", addr, s.ep, s.n, st.Reward)
			}
			s.ret += st.Reward
			if st.Terminated || st.Truncated || s.n >= limit {
				returns[s.ep], lengths[s.ep] = s.ret, s.n
				slots[cp] = nil
				if next+len(restart) < cfg.Episodes {
					restart = append(restart, cp)
				}
			}
		}
		if err := startEpisodes(restart); err != nil {
			return nil, err
		}
	}
	task := cfg.Task
	if task == "" {
		task = p.Manifest().Task
	}
	return result(p, task, true, cfg, returns, lengths, k, time.Since(start)), nil
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
