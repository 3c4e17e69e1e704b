package evaluate

import (
	"errors"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/internal/bundlefix"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/policies"
)

// refActor is testfix's independent float64 forward pass of the
// deterministic actor, as an envs.Actor.
type refActor struct{ a *models.Actor }

// Act runs the forward pass on obs.
func (r refActor) Act(obs []float32, _ *rand.Rand, act []float64) error {
	copy(act, testfix.RefActor(r.a, obs, nil))
	return nil
}

// TestEvaluateMatchesReference plays a random hopper actor's bundle on both
// runtimes and compares returns, lengths and D4RL scores with episodes
// played here by the float64 reference actor and D4RL's hopper constants.
func TestEvaluateMatchesReference(t *testing.T) {
	dir, a := bundlefix.Hopper(t, 4, "sac-on", "")
	const episodes, seed = 3, 11
	// The reference episodes.
	e, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := envs.Evaluate(e, refActor{a}, envs.EvalConfig{Episodes: episodes, Seed: func(ep int) int64 { return seed + int64(ep) }})
	if err != nil {
		t.Fatal(err)
	}
	wantRet, wantLen := ref.Returns, ref.Lengths
	e.Close()
	var mean, sq float64
	for _, r := range wantRet {
		mean += r / episodes
	}
	for _, r := range wantRet {
		sq += (r - mean) * (r - mean) / episodes
	}
	score := 100 * (mean + 20.272305) / (3234.3 + 20.272305)
	scoreStd := 100 * math.Sqrt(sq) / (3234.3 + 20.272305)

	for _, rt := range []string{policies.RuntimeORT, policies.RuntimeGo} {
		t.Run(rt, func(t *testing.T) {
			if rt == policies.RuntimeORT {
				ortskip.IfMissing(t)
			}
			p, err := policies.Open(dir, policies.Options{Runtime: rt, NoMonitor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			r, err := Run(p, Config{Episodes: episodes, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if r.Task != "hopper" || r.Runtime != rt || len(r.Returns) != episodes {
				t.Fatalf("result %+v", r)
			}
			for i := range wantRet {
				if r.Lengths[i] != wantLen[i] || math.Abs(r.Returns[i]-wantRet[i]) > 1e-3*math.Max(1, math.Abs(wantRet[i])) {
					t.Fatalf("episode %d: return %v over %d steps, want %v over %d", i, r.Returns[i], r.Lengths[i], wantRet[i], wantLen[i])
				}
			}
			if math.Abs(r.ReturnMean-mean) > 1e-3*math.Max(1, math.Abs(mean)) || math.Abs(r.ReturnStd-math.Sqrt(sq)) > 1e-2*math.Max(1, math.Sqrt(sq)) {
				t.Fatalf("return %v ± %v, want %v ± %v", r.ReturnMean, r.ReturnStd, mean, math.Sqrt(sq))
			}
			if r.Score == nil || math.Abs(r.Score.Mean-score) > 1e-3 || math.Abs(r.Score.Std-scoreStd) > 1e-3 {
				t.Fatalf("score %+v, want %v ± %v", r.Score, score, scoreStd)
			}
		})
	}

	t.Run("OnStep", func(t *testing.T) {
		p, err := policies.Open(dir, policies.Options{Runtime: policies.RuntimeGo, NoMonitor: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		calls := make([]int, episodes)
		r, err := Run(p, Config{Episodes: episodes, Seed: seed, OnStep: func(ep int, e *envs.Env) error {
			if calls[ep] != e.Steps() {
				t.Errorf("episode %d: call %d at env step %d", ep, calls[ep], e.Steps())
			}
			calls[ep]++
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range wantLen {
			if calls[i] != wantLen[i]+1 || r.Lengths[i] != wantLen[i] {
				t.Errorf("episode %d: %d calls, %d steps; want %d calls (reset and every step)", i, calls[i], r.Lengths[i], wantLen[i]+1)
			}
		}
		stop := errors.New("stop here")
		if _, err := Run(p, Config{Episodes: 1, OnStep: func(int, *envs.Env) error { return stop }}); !errors.Is(err, stop) {
			t.Errorf("OnStep's error: %v", err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		p, err := policies.Open(dir, policies.Options{Runtime: policies.RuntimeGo})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, c := range []struct {
			cfg  Config
			want string
		}{
			{Config{Episodes: 0}, "episodes"},
			{Config{Episodes: 1, Task: "robot-log"}, "not a built-in task"},
			{Config{Episodes: 1, Task: "walker2d"}, "17 observation"},
		} {
			if _, err := Run(p, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want an error containing %q", c.cfg, err, c.want)
			}
		}
	})
}

// TestEvaluateRemoteBatches plays the hopper bundle against hopper served
// by the Go server: with batches (5 episodes on 3 env copies, the policy
// acting on their observations as one batch), one copy per request
// (Copies 1), and against a server without batches (the fallback): every
// way gives the episodes the float64 reference actor plays in process.
func TestEvaluateRemoteBatches(t *testing.T) {
	dir, a := bundlefix.Hopper(t, 4, "sac-on", "")
	const episodes, seed = 5, 11
	e, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := envs.Evaluate(e, refActor{a}, envs.EvalConfig{Episodes: episodes, Seed: func(ep int) int64 { return seed + int64(ep) }})
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	p, err := policies.Open(dir, policies.Options{Runtime: policies.RuntimeGo, NoMonitor: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, c := range []struct {
		name             string
		serverCopies     int
		copies, wantUsed int
	}{{"batches", 8, 3, 3}, {"all at once", 8, 0, 5}, {"one per request", 8, 1, 1}, {"server without batches", 1, 0, 1}} {
		t.Run(c.name, func(t *testing.T) {
			addr := "unix://" + filepath.Join(t.TempDir(), "hopper.sock")
			l, err := remote.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- remote.ServeCopies(l, remote.Builtin("hopper"), c.serverCopies) }()
			defer func() { l.Close(); <-done }()
			r, err := Run(p, Config{Task: addr, Episodes: episodes, Seed: seed, Copies: c.copies})
			if err != nil {
				t.Fatal(err)
			}
			if r.Task != addr || r.Copies != c.wantUsed || len(r.Returns) != episodes || r.Score != nil {
				t.Fatalf("result: task %q, %d copies (want %d), %d returns, score %v", r.Task, r.Copies, c.wantUsed, len(r.Returns), r.Score)
			}
			steps := 0
			for i := range ref.Returns {
				steps += ref.Lengths[i]
				if r.Lengths[i] != ref.Lengths[i] || math.Abs(r.Returns[i]-ref.Returns[i]) > 1e-3*math.Max(1, math.Abs(ref.Returns[i])) {
					t.Errorf("episode %d: return %v over %d steps, want %v over %d", i, r.Returns[i], r.Lengths[i], ref.Returns[i], ref.Lengths[i])
				}
			}
			if r.Steps != steps {
				t.Errorf("%d env steps counted, the episodes have %d", r.Steps, steps)
			}
		})
	}
}
