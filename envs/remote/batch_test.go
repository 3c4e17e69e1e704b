package remote

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/envs"
)

// checkBatches asks the server at addr for more copies than it offers
// (want: what it grants) and plays them in batches (resets with seeds,
// steps of random in-bound actions on all running copies or a subset,
// copies restarted as their episodes end), playing the same seeds and
// actions on one single-env connection per copy alongside: every
// observation, reward and flag must be bit for bit the same.
func checkBatches(t *testing.T, addr string, want int) {
	t.Helper()
	b, err := Dial(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k, err := b.Copies(want + 2)
	if err != nil || k != want {
		t.Fatalf("Copies(%d): %d %v, want %d", want+2, k, err, want)
	}
	if _, err := b.Copies(2); err == nil {
		t.Error("Copies asked twice: no error")
	}
	singles := make([]*Client, k)
	for i := range singles {
		if singles[i], err = Dial(addr, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		defer singles[i].Close()
	}
	same := func(what string, got, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", what, got, want)
			}
		}
	}
	reset := func(copies []int, seed int64) {
		t.Helper()
		seeds := make([]*int64, len(copies))
		for i := range copies {
			s := seed + int64(i)
			seeds[i] = &s
		}
		obs, err := b.ResetBatch(copies, seeds)
		if err != nil {
			t.Fatal(err)
		}
		for i, cp := range copies {
			w, err := singles[cp].Reset(seeds[i])
			if err != nil {
				t.Fatal(err)
			}
			same("reset", obs[i], w)
		}
	}
	all := make([]int, k)
	for i := range all {
		all[i] = k - 1 - i // any order
	}
	reset(all, 5)
	rng := rand.New(rand.NewSource(1))
	spec := b.Spec
	ends := 0
	for round := 0; round < 60; round++ {
		copies := all
		if round%7 == 3 {
			copies = all[:1] // a subset
		}
		acts := make([][]float64, len(copies))
		for i := range acts {
			acts[i] = make([]float64, spec.ActDim)
			for j := range acts[i] {
				acts[i][j] = spec.Low[j] + rng.Float64()*(spec.High[j]-spec.Low[j])
			}
		}
		res, err := b.StepBatch(copies, acts)
		if err != nil {
			t.Fatal(err)
		}
		var restart []int
		for i, cp := range copies {
			obs, r, term, trunc, err := singles[cp].Step(acts[i])
			if err != nil {
				t.Fatal(err)
			}
			same("step obs", res[i].Obs, obs)
			if res[i].Reward != r || res[i].Terminated != term || res[i].Truncated != trunc {
				t.Fatalf("round %d copy %d: reward %v flags %v %v, want %v %v %v", round, cp, res[i].Reward, res[i].Terminated, res[i].Truncated, r, term, trunc)
			}
			if term || trunc {
				restart = append(restart, cp)
			}
		}
		if len(restart) > 0 {
			ends += len(restart)
			reset(restart, int64(100+round))
		}
	}
	if ends == 0 {
		t.Log("no episode ended in the batches: restarts not covered")
	}
	// Bad batches are refused here; the connection goes on.
	for _, bad := range [][]int{{k}, {0, 0}, {}} {
		if _, err := b.StepBatch(bad, make([][]float64, len(bad))); err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("copies %v: %v", bad, err)
		}
	}
	if _, err := b.ResetBatch([]int{0}, []*int64{nil}); err != nil {
		t.Fatalf("the connection after refused batches: %v", err)
	}
}

// TestBatchesGo: the Go server with ServeCopies grants at most its copies,
// plays them as single connections do, answers an env's failure in one
// copy with an error frame naming the copy (the connection goes on), and
// Serve (no batches) answers Copies as a server without batches: one copy,
// the connection still usable.
func TestBatchesGo(t *testing.T) {
	addr := "unix://" + t.TempDir() + "/hopper.sock"
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeCopies(l, Builtin("hopper"), 3) }()
	defer func() { l.Close(); <-done }()
	checkBatches(t, addr, 3)

	c, err := Dial(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if k, err := c.Copies(2); k != 2 || err != nil {
		t.Fatalf("Copies(2): %d %v", k, err)
	}
	// Copy 1 was never reset: the built-in env refuses the step.
	if _, err := c.StepBatch([]int{1}, [][]float64{{0, 0, 0}}); err == nil || !strings.Contains(err.Error(), "copy 1") {
		t.Fatalf("a step before the copy's reset: %v", err)
	}
	if _, err := c.Reset(nil); err != nil {
		t.Fatalf("the connection after an env's error: %v", err)
	}

	plain, _ := serve(t, "tcp", Builtin("hopper"))
	p, err := Dial(plain, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if k, err := p.Copies(8); k != 1 || err != nil {
		t.Fatalf("Copies on a server without batches: %d %v, want 1", k, err)
	}
	if _, err := p.Reset(nil); err != nil {
		t.Fatalf("the connection after Copies: %v", err)
	}
	e, err := envs.NewBackendEnv(p.Spec, p)
	if err != nil || e.Reset(1) == nil {
		t.Fatalf("a backend env on it: %v", err)
	}
}
