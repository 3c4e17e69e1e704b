package train

import (
	"math"
	"testing"

	"github.com/admpo/admpo/envs"
)

// TestStateFromObservationReproducesSteps: the diagnosis replays model
// transitions from observations alone. For recorded random transitions of
// each task, the simulator rebuilt from the observation (x position 0) must
// step to the recorded next observation and reward.
func TestStateFromObservationReproducesSteps(t *testing.T) {
	for _, task := range []string{"hopper", "walker2d", "halfcheetah"} {
		env, err := envs.Make(task)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := CollectDataset(task, 300, 4, UniformPolicy{Low: env.ActionLow(), High: env.ActionHigh()})
		if err != nil {
			t.Fatal(err)
		}
		od, ad := d.ObsDim, d.ActDim
		var worst float64
		nv, skipped := len(env.QVel()), 0
		for i := 0; i < d.N; i++ {
			if velocityClipped(task, d.Obs[i*od:(i+1)*od], nv) {
				skipped++
				continue
			}
			if err := setStateFromObs(env, d.Obs[i*od:(i+1)*od]); err != nil {
				t.Fatal(err)
			}
			a := make([]float64, ad)
			for j := range a {
				a[j] = float64(d.Act[i*ad+j])
			}
			st, err := env.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < od; j++ {
				worst = math.Max(worst, math.Abs(st.Obs[j]-float64(d.NextObs[i*od+j])))
			}
			if math.Abs(st.Reward-float64(d.Rew[i])) > 2e-3 || st.Terminated != d.Terminal[i] {
				t.Fatalf("%s row %d: reward %v / terminal %v, recorded %v / %v", task, i, st.Reward, st.Terminated, d.Rew[i], d.Terminal[i])
			}
		}
		env.Close()
		t.Logf("%s: worst next-observation difference %.2g (%d rows with clipped velocities skipped)", task, worst, skipped)
		if d.N-skipped < 50 {
			t.Errorf("%s: only %d of %d rows checked", task, d.N-skipped, d.N)
		}
		if worst > 2e-3 {
			t.Errorf("%s: rebuilt states step to next observations up to %g away from the recorded ones", task, worst)
		}
	}
}
