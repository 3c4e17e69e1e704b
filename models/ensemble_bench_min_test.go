package models

import (
	"math/rand"
	"os"
	"strconv"
	"testing"
)

// TestMinBenchEnsembleStep (ADMPO_MINBENCH_ENS=N) times N train steps of
// MBPO's ensemble at hopper's sizes (7 members of 4x200 swish layers, batch
// 256 each, weight decay, Adam) and prints the fastest, the 20th percentile
// and the median; with ADMPO_MINBENCH_HASH set also a hash of the
// parameters after the steps, to compare builds bit for bit. Run with
// GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 for one thread.
func TestMinBenchEnsembleStep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMPO_MINBENCH_ENS"))
	if n <= 0 {
		t.Skip("ADMPO_MINBENCH_ENS unset")
	}
	const obs, act, batch = 11, 3, 256
	rng := rand.New(rand.NewSource(1))
	e := NewEnsemble(obs, act, 7, []int{200, 200, 200, 200}, rng)
	g, err := NewEnsembleTrainGraph(e, batch, EnsembleDecay)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for m := range g.X {
		for i := range g.X[m] {
			g.X[m][i] = float32(rng.NormFloat64())
		}
		for i := range g.Target[m] {
			g.Target[m][i] = float32(0.1 * rng.NormFloat64())
		}
		for i := range g.Weight[m] {
			g.Weight[m][i] = 1
		}
	}
	opt := NewAdam(g.Params, 1e-3)
	minBenchSteps(t, "ensemble", n, g.Params, func() error {
		if err := g.Run(); err != nil {
			return err
		}
		return opt.Step()
	})
}
