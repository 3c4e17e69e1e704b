package dynamics

import "testing"

// TestEnsembleLRReachesTheFit: Config.EnsembleLR is the learning rate of
// the ensemble's fits (FitEnsemble hands EnsembleFitConfig.LR to Adam);
// 0 keeps MBPO's 1e-3, what every run before the setting used.
func TestEnsembleLRReachesTheFit(t *testing.T) {
	for _, c := range []struct{ set, want float64 }{{0, 1e-3}, {2e-4, 2e-4}, {5e-3, 5e-3}} {
		m, err := NewEnsemble(Config{Seed: 1, Ensemble: 3, Elites: 2, Patience: 1, LR: 7e-4, EnsembleLR: c.set}, 4, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(*Ensemble).FitCfg.LR; got != float32(c.want) {
			t.Errorf("EnsembleLR %v: the ensemble fits at learning rate %v, want %v", c.set, got, c.want)
		}
	}
}
