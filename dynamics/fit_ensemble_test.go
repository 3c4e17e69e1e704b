package dynamics

import (
	"context"
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/admpo/admpo/models"
)

func TestFitEnsembleOnLinearSystem(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	ls := newLinearSystem(1.02, rng)
	data := linearReplay(t, ls, 80, 25, rng)
	e := models.NewEnsemble(ls.obs, ls.act, 4, []int{32, 32}, rng)
	fc := DefaultEnsembleFitConfig()
	fc.Batch, fc.Elites, fc.MaxEpochs, fc.Patience = 64, 2, 60, 5
	fc.Decay = []float64{2.5e-5, 5e-5, 1e-4}
	rep, err := FitEnsemble(context.Background(), e, data, fc, rng)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d epochs, member holdout MSE %v, elites %v, first epoch %v", rep.Epochs, rep.MemberHoldoutMSE, rep.Elites, rep.History[0].HoldoutMSE)
	if rep.HoldoutCount != 400 {
		t.Errorf("holdout %d, want 20%% of 2000", rep.HoldoutCount)
	}
	// Elites are the members with the lowest holdout MSE.
	order := []int{0, 1, 2, 3}
	sort.Slice(order, func(a, b int) bool { return rep.MemberHoldoutMSE[order[a]] < rep.MemberHoldoutMSE[order[b]] })
	if len(e.Elites) != 2 || e.Elites[0] != order[0] || e.Elites[1] != order[1] {
		t.Errorf("elites %v, want %v", e.Elites, order[:2])
	}
	for i, mse := range rep.MemberHoldoutMSE {
		if !(mse < 0.2*rep.History[0].HoldoutMSE[i]) {
			t.Errorf("member %d: holdout MSE %.4f after the first epoch, %.4f kept", i, rep.History[0].HoldoutMSE[i], mse)
		}
	}
	// On fresh data the elites' means approach the true conditional mean and
	// their variances the noise variance (0.02² = 4e-4), a closed-form truth.
	const n = 500
	d := ls.obs + 1
	obs := make([]float32, n*ls.obs)
	act := make([]float32, n*ls.act)
	want := make([]float64, n*d) // noise-free [s'-s, r]
	for r := 0; r < n; r++ {
		s := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		a := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
		noise := ls.noise
		ls.noise = 0
		next, rew := ls.step(s, a, rng)
		ls.noise = noise
		for i := range s {
			obs[r*ls.obs+i] = float32(s[i])
			want[r*d+i] = next[i] - s[i]
		}
		act[r*2], act[r*2+1] = float32(a[0]), float32(a[1])
		want[r*d+ls.obs] = rew
	}
	mean := make([]float32, n*d)
	lv := make([]float32, n*d)
	for _, el := range e.Elites {
		if err := e.PredictMember(el, obs, act, mean, lv, nil); err != nil {
			t.Fatal(err)
		}
		var se float64
		vars := make([]float64, 0, n*d)
		for i := range want {
			er := float64(mean[i]) - want[i]
			se += er * er
			vars = append(vars, math.Exp(float64(lv[i])))
		}
		sort.Float64s(vars)
		mse, med := se/float64(n*d), vars[len(vars)/2]
		t.Logf("elite %d: MSE to the true mean %.2e, median variance %.2e (noise variance 4e-4)", el, mse, med)
		if mse > 1e-3 {
			t.Errorf("elite %d: MSE to the true mean %.2e", el, mse)
		}
		if med < 4e-4/2 || med > 4e-4*3 {
			t.Errorf("elite %d: median predicted variance %.2e, noise variance 4e-4", el, med)
		}
	}
}
