package dynamics

import (
	"context"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models"
)

// Item 6: an ADM epoch of EpochPasses = m passes holds as many Adam steps
// as the authors' train_size//256*m (within m: we round the last batch up),
// and the authors' improvement rule as they wrote it.
func TestADMEpochPassesAndAuthorsImprovement(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ls := newLinearSystemAngle(0.9, 1, rng)
	data := linearReplay(t, ls, 20, 20, rng)
	m := 3
	for _, passes := range []int{1, m} {
		adm, err := models.NewADM(models.ADMConfig{ObsDim: ls.obs, ActDim: ls.act, Hidden: 8, Layers: 1, ResBlocks: 1, M: m}, rand.New(rand.NewSource(2)))
		if err != nil {
			t.Fatal(err)
		}
		fc := DefaultADMFitConfig()
		fc.MaxEpochs, fc.EpochPasses, fc.Batch = 1, passes, 32
		rep, err := FitADM(context.Background(), adm, data, fc, rand.New(rand.NewSource(3)))
		if err != nil {
			t.Fatal(err)
		}
		perPass := (rep.TrainStarts + fc.Batch - 1) / fc.Batch
		if got := rep.History[0].Steps; got != passes*perPass {
			t.Errorf("passes %d: %d Adam steps in the epoch, want %d", passes, got, passes*perPass)
		}
		if passes == m {
			authors := rep.TrainStarts / fc.Batch * m // range(train_size//batch_size*self.max_arm_step)
			if d := rep.History[0].Steps - authors; d < 0 || d > m {
				t.Errorf("epoch of %d steps, authors' %d", rep.History[0].Steps, authors)
			}
		}
	}
	// learn_dynamics_from: improve_ks non-empty and mean(new) < mean(old).
	ref := func(old, now []float64) bool {
		var improve []int
		mo, mn := 0.0, 0.0
		for k := range old {
			if (old[k]-now[k])/old[k] > 0 {
				improve = append(improve, k)
			}
			mo += old[k] / float64(len(old))
			mn += now[k] / float64(len(now))
		}
		return len(improve) > 0 && mn < mo
	}
	for _, c := range [][2][]float64{
		{{1, 1, 1}, {0.9, 1.2, 1}},     // one k better, mean worse
		{{1, 1, 1}, {0.9, 1.05, 1}},    // one k better, mean better
		{{1, 2, 3}, {1, 2, 3}},         // equal
		{{0.5, 0.5}, {0.49, 0.5}},      // a small gain
		{{0.2, 0.3, 0.4}, {3, 0, 0.5}}, // mean better through one k
	} {
		if got, want := authorsImproved(c[0], c[1]), ref(c[0], c[1]); got != want {
			t.Errorf("authorsImproved(%v, %v) = %v, authors %v", c[0], c[1], got, want)
		}
	}
}
