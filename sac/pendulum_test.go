package sac

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/envs"
)

// pendulumRun sets up one SAC learning run on inverted-pendulum.
type pendulumRun struct {
	Seed           int64
	Hidden         []int
	Batch          int
	LR             float64 // actor, critic and entropy-coefficient learning rate
	Tau            float64 // Polyak rate of the target critics
	UpdatesPerStep int
	WarmUp         int // uniform random steps before the first update
	EvalEvery      int // env steps between deterministic evaluations
	EvalEpisodes   int
	MaxSteps       int                              // env step budget
	Log            func(format string, args ...any) // progress at every evaluation, if set
}

// pendulumResult is how a run went.
type pendulumResult struct {
	SolvedAt int       // env steps when an evaluation first returned 1000 on every episode; 0 if never
	Evals    []float64 // mean evaluation return after every EvalEvery steps
	Updates  int
	Elapsed  time.Duration
}

// pendulumEvaluate returns the mean and minimum return of deterministic episodes.
func pendulumEvaluate(s *Agent, env *envs.Env, episodes int, seed int64) (mean, minRet float64, err error) {
	minRet = 1e9
	for e := 0; e < episodes; e++ {
		obs, ret := env.Reset(seed+int64(e)), 0.0
		for {
			a, err := s.Act(envs.Float32(obs), true, nil)
			if err != nil {
				return 0, 0, err
			}
			st, err := env.Step([]float64{float64(a[0])})
			if err != nil {
				return 0, 0, err
			}
			ret += st.Reward
			obs = st.Obs
			if st.Terminated || st.Truncated {
				break
			}
		}
		mean += ret / float64(episodes)
		minRet = min(minRet, ret)
	}
	return mean, minRet, nil
}

// runSACPendulum is a plain SAC loop: uniform random actions for WarmUp
// steps, then actions sampled from the stochastic policy, every transition
// into a replay buffer, UpdatesPerStep SAC updates per env step from the end
// of the warm-up on, and every EvalEvery steps an evaluation of
// EvalEpisodes deterministic episodes on a separate env. It stops at the
// first evaluation in which every episode returns the maximum, 1000.
func runSACPendulum(p pendulumRun) (pendulumResult, error) {
	var res pendulumResult
	start := time.Now()
	env, err := envs.Make("inverted-pendulum")
	if err != nil {
		return res, err
	}
	defer env.Close()
	evalEnv, err := envs.Make("inverted-pendulum")
	if err != nil {
		return res, err
	}
	defer evalEnv.Close()
	low, high := env.ActionLow(), env.ActionHigh()
	obsDim, actDim := env.Task.ObsDim, env.Task.ActDim
	cfg := DefaultConfig(actDim)
	cfg.Hidden, cfg.BatchSize, cfg.Seed = p.Hidden, p.Batch, p.Seed
	cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR, cfg.Tau = p.LR, p.LR, p.LR, p.Tau
	s, err := New(obsDim, low, high, cfg)
	if err != nil {
		return res, err
	}
	defer s.Close()
	replay, err := buffer.New(obsDim, actDim, p.MaxSteps, p.Seed)
	if err != nil {
		return res, err
	}
	batch := buffer.NewBatch(p.Batch, obsDim, actDim)
	rng := rand.New(rand.NewSource(p.Seed + 1000))
	obs := env.Reset(p.Seed)
	act := make([]float64, actDim)
	var last Stats
	epRet, epSum, epN := 0.0, 0.0, 0
	for step := 1; step <= p.MaxSteps; step++ {
		if step <= p.WarmUp {
			for j := range act {
				act[j] = low[j] + (high[j]-low[j])*rng.Float64()
			}
		} else {
			a, err := s.Act(envs.Float32(obs), false, rng)
			if err != nil {
				return res, err
			}
			for j := range act {
				act[j] = float64(a[j])
			}
		}
		st, err := env.Step(act)
		if err != nil {
			return res, err
		}
		if err := replay.Add(envs.Float32(obs), envs.Float32(act), float32(st.Reward), envs.Float32(st.Obs), st.Terminated, st.Truncated); err != nil {
			return res, err
		}
		obs = st.Obs
		epRet += st.Reward
		if st.Terminated || st.Truncated {
			obs = env.ResetNext()
			epSum, epN, epRet = epSum+epRet, epN+1, 0
		}
		if step >= p.WarmUp {
			for k := 0; k < p.UpdatesPerStep; k++ {
				if err := replay.Sample(batch); err != nil {
					return res, err
				}
				if _, err = s.Update(batch); err != nil {
					return res, err
				}
				if last, err = s.LastStats(); err != nil {
					return res, err
				}
				res.Updates++
			}
		}
		if step%p.EvalEvery == 0 {
			mean, minRet, err := pendulumEvaluate(s, evalEnv, p.EvalEpisodes, 1_000_000*(p.Seed+1)+int64(step))
			if err != nil {
				return res, err
			}
			res.Evals = append(res.Evals, mean)
			if p.Log != nil {
				p.Log("step %d: eval mean %.1f min %.1f, train episodes %d mean %.1f, alpha %.4f Q1 %.2f logpi %.3f critic loss %.4f",
					step, mean, minRet, epN, epSum/max(1, float64(epN)), last.Alpha, last.Q1, last.LogPi, last.CriticLoss)
			}
			epSum, epN = 0, 0
			if minRet >= 1000 {
				res.SolvedAt = step
				break
			}
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (r pendulumResult) String() string {
	return fmt.Sprintf("solved at %d steps, %d updates, %.1f s, evaluations %v", r.SolvedAt, r.Updates, r.Elapsed.Seconds(), r.Evals)
}

// TestSACSolvesInvertedPendulum is SAC's learning test: a plain SAC loop
// (runSACPendulum) must reach the maximum return, 1000 on each of 5
// deterministic evaluation episodes, on inverted-pendulum within 15,000 env
// steps for seeds 0 and 1.
//
// Settings: 64x64 ReLU networks, batch 128, learning rate 1e-3 for actor,
// critics and α, Polyak rate 0.02, γ 0.99, automatic α from 0.2 towards
// entropy -1, 1000 uniform random warm-up steps, one update per env step,
// evaluation every 1000 steps. With the paper's τ = 0.005 (and lr 3e-4 or
// 1e-3) runs sat for 10-20k steps on a plateau of ~80-step episodes (the
// cart drifts into the end of its rail) and several seeds missed 1000 within
// 25k steps; τ = 0.02 solved each of seeds 0-11 at 5,000-8,000 steps.
//
// Budget: at most 15,000 env steps and 14,001 updates per seed, about twice
// the worst run seen; a run stops at its first perfect evaluation, so a
// passing test does about 2 x 6,000 updates. Updates dominate the time: about
// 2 ms each with OPENBLAS_NUM_THREADS=1 on this busy 2-core machine, and 81 s
// for the whole test (25 s of CPU) with OpenBLAS's default two threads at a
// load average of 19.
func TestSACSolvesInvertedPendulum(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test (tens of seconds): skipped with -short")
	}
	const budget = 15000
	for _, seed := range []int64{0, 1} {
		r, err := runSACPendulum(pendulumRun{Seed: seed, Hidden: []int{64, 64}, Batch: 128, LR: 1e-3, Tau: 0.02,
			UpdatesPerStep: 1, WarmUp: 1000, EvalEvery: 1000, EvalEpisodes: 5, MaxSteps: budget, Log: t.Logf})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("seed %d: %v", seed, r)
		if r.SolvedAt == 0 {
			t.Errorf("seed %d: no evaluation reached 1000 within %d env steps; evaluation means %v", seed, budget, r.Evals)
		}
	}
}
