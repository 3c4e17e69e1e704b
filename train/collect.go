package train

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
)

// ActionSource chooses the behaviour policy's action for one observation.
type ActionSource interface {
	// Action writes an action for obs into out, drawing any noise from rng.
	Action(obs []float32, rng *rand.Rand, out []float64) error
}

// UniformPolicy draws every action uniformly from the action bounds (D4RL's
// "random" data sets).
type UniformPolicy struct{ Low, High []float64 }

// Action draws a uniform action.
func (u UniformPolicy) Action(_ []float32, rng *rand.Rand, out []float64) error {
	if len(out) != len(u.Low) || len(u.High) != len(u.Low) {
		return fmt.Errorf("train: uniform policy has %d/%d bounds for %d actions", len(u.Low), len(u.High), len(out))
	}
	for i := range out {
		out[i] = u.Low[i] + rng.Float64()*(u.High[i]-u.Low[i])
	}
	return nil
}

// ONNXPolicy acts with an exported SAC actor: a sample of the
// tanh-squashed Gaussian (noise from rng), or its mean when Deterministic.
type ONNXPolicy struct {
	P             *infer.Policy
	Deterministic bool
	noise, act    []float32
}

// Action runs the actor on one observation.
func (p *ONNXPolicy) Action(obs []float32, rng *rand.Rand, out []float64) error {
	ad := p.P.ActDim
	if len(out) != ad {
		return fmt.Errorf("train: policy has %d actions, the task %d", ad, len(out))
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

// CollectStats describes a collected data set.
type CollectStats struct {
	Transitions int
	Episodes    int     // complete episodes (ended by termination or the 1000-step limit)
	MeanReturn  float64 // over complete episodes; over the cut one if none completed
	MeanLength  float64
	Terminals   int
	Timeouts    int // 1000-step truncations (the cut last row not included)
}

// CollectDataset runs act in a fresh env of the task for n transitions and
// returns them in D4RL's layout: observations, actions, rewards,
// next_observations, terminals (the task's termination rule fired),
// timeouts (the 1000-step limit), and infos/qpos and infos/qvel (the full
// simulator state before each step, the x position included). Episodes
// follow one another; the last row, cut by n, is flagged as a timeout so
// that no episode runs into data appended after it. The env's reset noise
// and the policy's noise are seeded from seed.
func CollectDataset(task string, n int, seed int64, act ActionSource) (*datasets.Dataset, CollectStats, error) {
	var st CollectStats
	if n <= 0 {
		return nil, st, fmt.Errorf("train: collect: size %d must be positive", n)
	}
	env, err := envs.Make(task)
	if err != nil {
		return nil, st, err
	}
	defer env.Close()
	od, ad := env.Task.ObsDim, env.Task.ActDim
	qp, qv := len(env.QPos()), len(env.QVel())
	d := &datasets.Dataset{ObsDim: od, ActDim: ad, N: n, QPosDim: qp, QVelDim: qv,
		Obs: make([]float32, 0, n*od), Act: make([]float32, 0, n*ad), Rew: make([]float32, 0, n),
		NextObs: make([]float32, 0, n*od), Terminal: make([]bool, 0, n), Timeout: make([]bool, 0, n),
		QPos: make([]float32, 0, n*qp), QVel: make([]float32, 0, n*qv), Meta: map[string]string{}}
	rng := rand.New(rand.NewSource(seed))
	obs := f32(env.Reset(seed))
	a := make([]float64, ad)
	var ret, sumRet, sumLen float64
	for i := 0; i < n; i++ {
		if err := act.Action(obs, rng, a); err != nil {
			return nil, st, fmt.Errorf("train: collect: row %d: %w", i, err)
		}
		d.QPos = append(d.QPos, f32(env.QPos())...)
		d.QVel = append(d.QVel, f32(env.QVel())...)
		s, err := env.Step(a)
		if err != nil {
			return nil, st, fmt.Errorf("train: collect: row %d: %w", i, err)
		}
		next := f32(s.Obs)
		d.Obs = append(d.Obs, obs...)
		d.Act = append(d.Act, f32clip(a, env.ActionLow(), env.ActionHigh())...)
		d.Rew = append(d.Rew, float32(s.Reward))
		d.NextObs = append(d.NextObs, next...)
		d.Terminal = append(d.Terminal, s.Terminated)
		d.Timeout = append(d.Timeout, s.Truncated && !s.Terminated)
		ret += s.Reward
		if s.Terminated || s.Truncated {
			st.Episodes++
			sumRet += ret
			sumLen += float64(env.Steps())
			if s.Terminated {
				st.Terminals++
			} else {
				st.Timeouts++
			}
			ret = 0
			next = f32(env.ResetNext())
		} else if i == n-1 {
			d.Timeout[i] = true // the cut
		}
		obs = next
	}
	st.Transitions = n
	if st.Episodes > 0 {
		st.MeanReturn, st.MeanLength = sumRet/float64(st.Episodes), sumLen/float64(st.Episodes)
	} else {
		st.MeanReturn, st.MeanLength = ret, float64(n)
	}
	return d, st, nil
}

// f32clip stores the action the env applied (clipped to the bounds).
func f32clip(a, lo, hi []float64) []float32 {
	out := make([]float32, len(a))
	for i, v := range a {
		out[i] = float32(math.Max(lo[i], math.Min(hi[i], v)))
	}
	return out
}

// ConcatDatasets appends data sets of the same widths (D4RL's medium-expert
// is medium followed by expert). Metadata is not copied.
func ConcatDatasets(parts ...*datasets.Dataset) (*datasets.Dataset, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("train: concatenating no data sets")
	}
	p0 := parts[0]
	out := &datasets.Dataset{ObsDim: p0.ObsDim, ActDim: p0.ActDim, QPosDim: p0.QPosDim, QVelDim: p0.QVelDim, Meta: map[string]string{}}
	for i, p := range parts {
		if p.ObsDim != p0.ObsDim || p.ActDim != p0.ActDim || p.QPosDim != p0.QPosDim || p.QVelDim != p0.QVelDim ||
			(p.QPos == nil) != (p0.QPos == nil) || (p.QVel == nil) != (p0.QVel == nil) {
			return nil, fmt.Errorf("train: data set %d has other widths than the first", i)
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

// DatasetFromReplay copies the first n transitions (0: all) of a buffer in
// insertion order, D4RL layout without infos; a last row that ends no
// episode is flagged as a timeout.
func DatasetFromReplay(r *Replay, n int) (*datasets.Dataset, error) {
	if n <= 0 || n > r.Len() {
		n = r.Len()
	}
	if n == 0 {
		return nil, fmt.Errorf("train: empty replay buffer")
	}
	od, ad := r.ObsDim, r.ActDim
	d := &datasets.Dataset{ObsDim: od, ActDim: ad, N: n, Meta: map[string]string{},
		Obs: make([]float32, n*od), Act: make([]float32, n*ad), Rew: make([]float32, n),
		NextObs: make([]float32, n*od), Terminal: make([]bool, n), Timeout: make([]bool, n)}
	for k := 0; k < n; k++ {
		i := r.slot(k)
		copy(d.Obs[k*od:], r.obs[i*od:(i+1)*od])
		copy(d.Act[k*ad:], r.act[i*ad:(i+1)*ad])
		copy(d.NextObs[k*od:], r.next[i*od:(i+1)*od])
		d.Rew[k] = r.rew[i]
		d.Terminal[k] = r.terminal[i]
		d.Timeout[k] = r.end[i] && !r.terminal[i]
	}
	if !d.Terminal[n-1] {
		d.Timeout[n-1] = true
	}
	return d, nil
}

// EvalPolicy runs episodes deterministic episodes of act and returns their
// mean and std return (seeds seed, seed+1, ...).
func EvalPolicy(task string, act ActionSource, episodes int, seed int64) (mean, std float64, err error) {
	env, err := envs.Make(task)
	if err != nil {
		return 0, 0, err
	}
	defer env.Close()
	rng := rand.New(rand.NewSource(seed))
	a := make([]float64, env.Task.ActDim)
	rets := make([]float64, episodes)
	for ep := range rets {
		obs := f32(env.Reset(seed + int64(ep)))
		for {
			if err := act.Action(obs, rng, a); err != nil {
				return 0, 0, err
			}
			s, err := env.Step(a)
			if err != nil {
				return 0, 0, err
			}
			rets[ep] += s.Reward
			if s.Terminated || s.Truncated {
				break
			}
			obs = f32(s.Obs)
		}
	}
	mean, std = meanStd(rets)
	return mean, std, nil
}
