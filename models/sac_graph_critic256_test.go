package models

import (
	"math"
	"math/rand"
	"testing"
)

// TestCriticGraphBatchSizes checks the twin-critic loss gradient at SAC's
// batch sizes against its closed form: for loss = mean((Q1-y)²) +
// mean((Q2-y)²), the gradient of critic i's output bias is 2·mean(Qi - y).
// (An axis-0 G.Concat of the two error vectors gave critic 2 critic 1's
// gradient at batch 256, 512 and 1024.)
func TestCriticGraphBatchSizes(t *testing.T) {
	for _, bs := range []int{16, 255, 256, 512} {
		rng := rand.New(rand.NewSource(int64(bs)))
		c1 := NewCritic(5, 2, []int{8, 8}, rng)
		c2 := NewCritic(5, 2, []int{8, 8}, rng)
		g, err := NewSACCriticGraph(c1, c2, bs)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]float32{g.Obs.Data, g.Act.Data, g.Target.Data} {
			for i := range in {
				in[i] = float32(rng.NormFloat64())
			}
		}
		_, q1, q2, err := g.Run()
		if err != nil {
			t.Fatal(err)
		}
		for ci, q := range [][]float32{q1, q2} {
			var want float64
			for i := range q {
				want += 2 * float64(q[i]-g.Target.Data[i]) / float64(bs)
			}
			n := len(g.Params) / 2 // critic 1's weights, then critic 2's
			gv, err := g.Params[(ci+1)*n-1].Grad()
			if err != nil {
				t.Fatal(err)
			}
			got := float64(gv.Data().([]float32)[0])
			if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Errorf("batch %d critic %d: output-bias gradient %v, closed form %v", bs, ci+1, got, want)
			}
		}
		g.Close()
	}
}
