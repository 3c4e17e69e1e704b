package collect

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sync"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
)

// ONNXPolicy acts with an exported SAC actor: a sample of the
// tanh-squashed Gaussian (noise from rng), or its mean when Deterministic.
// It is an envs.Actor.
type ONNXPolicy struct {
	P             *infer.Policy
	Deterministic bool
	noise, act    []float32
}

// OpenONNXPolicy opens the ONNX actor on ONNX Runtime with opts, acting
// with samples, or with its mean action when deterministic. Close frees it.
func OpenONNXPolicy(actor []byte, opts infer.Options, deterministic bool) (*ONNXPolicy, error) {
	p, err := infer.OpenPolicy(actor, opts)
	if err != nil {
		return nil, err
	}
	return &ONNXPolicy{P: p, Deterministic: deterministic}, nil
}

// Close frees the actor's ONNX Runtime session.
func (p *ONNXPolicy) Close() { p.P.Close() }

// Act runs the actor on one observation.
func (p *ONNXPolicy) Act(obs []float32, rng *rand.Rand, out []float64) error {
	ad := p.P.ActDim
	if len(out) != ad {
		return fmt.Errorf("collect: policy has %d actions, the task %d", ad, len(out))
	}
	if p.act == nil {
		p.act, p.noise = make([]float32, ad), make([]float32, ad)
	}
	var nz []float32
	if !p.Deterministic {
		for i := range p.noise {
			p.noise[i] = float32(rng.NormFloat64())
		}
		nz = p.noise
	}
	if err := p.P.Act(obs, nz, p.act); err != nil {
		return err
	}
	for i, v := range p.act {
		out[i] = float64(v)
	}
	return nil
}

// Stats describes a collected data set.
type Stats struct {
	Transitions int
	Episodes    int     // complete episodes (ended by termination or the 1000-step limit)
	MeanReturn  float64 // over complete episodes; over the cut one if none completed
	MeanLength  float64
	Terminals   int
	Timeouts    int // 1000-step truncations (the cut last row not included)
}

// NewActor makes the actor of one collection worker and the function that
// frees it; each worker owns the one it gets.
type NewActor func() (envs.Actor, func(), error)

// SharedActor hands every worker the same stateless actor (e.g. an
// envs.UniformActor).
func SharedActor(a envs.Actor) NewActor {
	return func() (envs.Actor, func(), error) { return a, func() {}, nil }
}

// ONNXActors opens the ONNX actor once per worker (one ONNX Runtime thread
// each) acting stochastically, or with its mean action when deterministic.
func ONNXActors(actor []byte, deterministic bool) NewActor {
	return func() (envs.Actor, func(), error) {
		p, err := OpenONNXPolicy(actor, infer.Options{Threads: 1}, deterministic)
		if err != nil {
			return nil, nil, err
		}
		return p, p.Close, nil
	}
}

// OpenEnv opens one instance of the environment data are collected in: a
// built-in task (Builtin), a task file's (envs.MakeTask) or a remote
// environment's (remote.Make). Every collection worker and every policy
// evaluation opens its own and closes it.
type OpenEnv func() (*envs.Env, error)

// Builtin opens the built-in task name.
func Builtin(name string) OpenEnv {
	return func() (*envs.Env, error) { return envs.Make(name) }
}

// Options are how Dataset runs: its workers and its progress report.
type Options struct {
	Workers int // goroutines running episodes, each with its own env (0: GOMAXPROCS)
	// Progress, when set, is called with the rows collected so far after
	// each episode is added (from Dataset's goroutine, in episode order).
	Progress func(rows int)
}

// collectedEpisode is one episode of Dataset in D4RL's layout.
type collectedEpisode struct {
	index                 int
	obs, act, rew, next   []float32
	qpos, qvel            []float32
	terminated, truncated bool
	ret                   float64
	err                   error
}

// episodeSeed is episode e's seed for the env's reset noise and the
// policy's noise: a SplitMix64 mix of the run seed and e, so that every
// episode is the same whichever worker runs it.
func episodeSeed(seed int64, e int) int64 {
	z := uint64(seed)*0x9e3779b97f4a7c15 + uint64(e+1)*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

// Dataset runs episodes of the environment open opens for n transitions
// and returns them in D4RL's layout: observations, actions, rewards,
// next_observations, terminals (the task's termination rule fired),
// timeouts (the episode limit: 1000 steps for the built-in tasks), and
// infos/qpos and infos/qvel (the full simulator state before each step,
// the x position included; none for an environment without a simulator,
// e.g. a remote one). Episodes follow one another in their
// index order; the last one, cut by n, has its last row flagged as a
// timeout so that no episode runs into data appended after it.
//
// Episode e resets the env and draws the policy's noise from seeds made of
// seed and e alone, so the data depend on seed only, not on the workers:
// opt.Workers goroutines each run whole episodes with their own env and
// their own actor from newAct.
func Dataset(open OpenEnv, n int, seed int64, opt Options, newAct NewActor) (*datasets.Dataset, Stats, error) {
	var st Stats
	if n <= 0 {
		return nil, st, fmt.Errorf("collect: size %d must be positive", n)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	probe, err := open()
	if err != nil {
		return nil, st, fmt.Errorf("collect: %w", err)
	}
	od, ad := probe.Task.ObsDim, probe.Task.ActDim
	qp, qv := len(probe.QPos()), len(probe.QVel())
	probe.Close()

	jobs := make(chan int)
	results := make(chan collectedEpisode, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(jobs)
		for e := 0; ; e++ {
			select {
			case jobs <- e:
			case <-stop:
				return
			}
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send := func(r collectedEpisode) bool {
				select {
				case results <- r:
					return true
				case <-stop:
					return false
				}
			}
			env, err := open()
			if err != nil {
				send(collectedEpisode{index: -1, err: err})
				return
			}
			defer env.Close()
			act, free, err := newAct()
			if err != nil {
				send(collectedEpisode{err: err})
				return
			}
			defer free()
			for e := range jobs {
				if !send(runEpisode(env, act, e, episodeSeed(seed, e))) {
					return
				}
			}
		}()
	}

	d := &datasets.Dataset{ObsDim: od, ActDim: ad, N: n, QPosDim: qp, QVelDim: qv,
		Obs: make([]float32, 0, n*od), Act: make([]float32, 0, n*ad), Rew: make([]float32, 0, n),
		NextObs: make([]float32, 0, n*od), Terminal: make([]bool, 0, n), Timeout: make([]bool, 0, n),
		Meta: map[string]string{}}
	if qp > 0 {
		d.QPos = make([]float32, 0, n*qp)
	}
	if qv > 0 {
		d.QVel = make([]float32, 0, n*qv)
	}
	pending := map[int]collectedEpisode{}
	var sumRet, sumLen, cutRet float64
	for next, rows := 0, 0; rows < n && err == nil; {
		r := <-results
		if r.err != nil && r.index < 0 {
			err = fmt.Errorf("collect: opening a worker's env: %w", r.err)
			break
		}
		if r.err != nil {
			err = fmt.Errorf("collect: episode %d: %w", r.index, r.err)
			break
		}
		pending[r.index] = r
		for rows < n {
			e, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			k := min(len(e.rew), n-rows)
			d.Obs = append(d.Obs, e.obs[:k*od]...)
			d.Act = append(d.Act, e.act[:k*ad]...)
			d.Rew = append(d.Rew, e.rew[:k]...)
			d.NextObs = append(d.NextObs, e.next[:k*od]...)
			d.QPos = append(d.QPos, e.qpos[:k*qp]...)
			d.QVel = append(d.QVel, e.qvel[:k*qv]...)
			for i := 0; i < k; i++ {
				last := i == len(e.rew)-1
				d.Terminal = append(d.Terminal, last && e.terminated)
				d.Timeout = append(d.Timeout, last && e.truncated && !e.terminated)
			}
			rows += k
			if opt.Progress != nil {
				opt.Progress(rows)
			}
			if k < len(e.rew) {
				d.Timeout[rows-1] = true // the cut
				for _, v := range e.rew[:k] {
					cutRet += float64(v)
				}
				continue
			}
			st.Episodes++
			sumRet += e.ret
			sumLen += float64(len(e.rew))
			if e.terminated {
				st.Terminals++
			} else {
				st.Timeouts++
			}
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, st, err
	}
	st.Transitions = n
	if st.Episodes > 0 {
		st.MeanReturn, st.MeanLength = sumRet/float64(st.Episodes), sumLen/float64(st.Episodes)
	} else {
		st.MeanReturn, st.MeanLength = cutRet, float64(n)
	}
	return d, st, nil
}

// runEpisode runs episode e of act in env from seed until termination or
// the 1000-step limit (envs.Play), recording every transition and the
// simulator state before it.
func runEpisode(env *envs.Env, act envs.Actor, e int, seed int64) collectedEpisode {
	r := collectedEpisode{index: e}
	rng := rand.New(rand.NewSource(seed ^ 0x5eed))
	lo, hi := env.ActionLow(), env.ActionHigh()
	ret, _, err := envs.Play(env, act, env.Reset(seed), rng, envs.Hooks{
		BeforeStep: func(obs []float32, a []float64) error {
			r.qpos = append(r.qpos, envs.Float32(env.QPos())...)
			r.qvel = append(r.qvel, envs.Float32(env.QVel())...)
			r.obs = append(r.obs, obs...)
			r.act = append(r.act, f32clip(a, lo, hi)...)
			return nil
		},
		AfterStep: func(s envs.Step, next []float32) error {
			r.rew = append(r.rew, float32(s.Reward))
			r.next = append(r.next, next...)
			r.terminated, r.truncated = s.Terminated, s.Truncated
			return nil
		},
	})
	r.ret, r.err = ret, err
	return r
}

// f32clip stores the action the env applied (clipped to the bounds).
func f32clip(a, lo, hi []float64) []float32 {
	out := make([]float32, len(a))
	for i, v := range a {
		out[i] = float32(math.Max(lo[i], math.Min(hi[i], v)))
	}
	return out
}

// Concat appends data sets of the same widths (D4RL's medium-expert
// is medium followed by expert). Metadata is not copied.
func Concat(parts ...*datasets.Dataset) (*datasets.Dataset, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("collect: concatenating no data sets")
	}
	p0 := parts[0]
	out := &datasets.Dataset{ObsDim: p0.ObsDim, ActDim: p0.ActDim, QPosDim: p0.QPosDim, QVelDim: p0.QVelDim, Meta: map[string]string{}}
	for i, p := range parts {
		if p.ObsDim != p0.ObsDim || p.ActDim != p0.ActDim || p.QPosDim != p0.QPosDim || p.QVelDim != p0.QVelDim ||
			(p.QPos == nil) != (p0.QPos == nil) || (p.QVel == nil) != (p0.QVel == nil) {
			return nil, fmt.Errorf("collect: data set %d has other widths than the first", i)
		}
		out.N += p.N
		out.Obs = append(out.Obs, p.Obs...)
		out.Act = append(out.Act, p.Act...)
		out.Rew = append(out.Rew, p.Rew...)
		out.NextObs = append(out.NextObs, p.NextObs...)
		out.Terminal = append(out.Terminal, p.Terminal...)
		tout := append([]bool(nil), p.Timeout...)
		if p.N > 0 && !p.Terminal[p.N-1] {
			tout[p.N-1] = true // never let an episode run into the next part
		}
		out.Timeout = append(out.Timeout, tout...)
		out.QPos = append(out.QPos, p.QPos...)
		out.QVel = append(out.QVel, p.QVel...)
	}
	return out, nil
}

// EvalPolicy runs episodes deterministic episodes of act in the env that
// open opens and returns their mean and std return (reset seeds seed,
// seed+1, ...; the actor's noise, if any, from one source seeded seed).
func EvalPolicy(open OpenEnv, act envs.Actor, episodes int, seed int64) (mean, std float64, err error) {
	env, err := open()
	if err != nil {
		return 0, 0, fmt.Errorf("collect: %w", err)
	}
	defer env.Close()
	r, err := envs.Evaluate(env, act, envs.EvalConfig{Episodes: episodes, RNG: rand.New(rand.NewSource(seed)),
		Seed: func(ep int) int64 { return seed + int64(ep) }})
	if err != nil {
		return 0, 0, fmt.Errorf("collect: %w", err)
	}
	return r.Mean, r.Std, nil
}
