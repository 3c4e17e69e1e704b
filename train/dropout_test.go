package train

import (
	"encoding/json"
	"testing"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
)

// Item 7: the authors never put the ADM in eval mode, so its ResBlocks'
// Dropout(0.1) stays on in roll-outs, in the U^ADM means and in holdout
// validation. rollout_dropout (--rollout-dropout) does the same; it is on in
// the paper preset for ADMPO (online and offline), off in quick and for
// configs written before it.
func TestRolloutDropoutAsAuthors(t *testing.T) {
	const authorsDropout = 0.1 // ResBlock: Dropout(0.1)
	for env := range paperOnline {
		for _, algo := range Algos {
			for _, preset := range []string{"paper", "quick"} {
				c, err := Preset(preset, env, algo, 3)
				if err != nil {
					t.Fatal(err)
				}
				if want := preset == "paper" && algo == "admpo"; c.RolloutDropout != want {
					t.Errorf("%s %s %s: rollout_dropout %v, want %v", preset, env, algo, c.RolloutDropout, want)
				}
			}
		}
	}
	for _, algo := range OfflineAlgos {
		for _, preset := range []string{"paper", "quick"} {
			c, err := OfflinePreset(preset, "hopper", "medium-replay", algo, 3)
			if err != nil {
				t.Fatal(err)
			}
			if want := preset == "paper" && algo == "admpo"; c.RolloutDropout != want {
				t.Errorf("offline %s %s: rollout_dropout %v, want %v", preset, algo, c.RolloutDropout, want)
			}
			if algo == "admpo" && c.dynamicsConfig().RolloutDropout != c.RolloutDropout {
				t.Errorf("offline %s: the model settings lose rollout_dropout", preset)
			}
		}
	}
	// Configs without the key (version 1, and version 2 before it) keep
	// rolling out without dropout.
	for _, js := range []string{legacyOnlineJSON, `{"config_version":2,"algo":"admpo"}`} {
		var c OnlineConfig
		if err := json.Unmarshal([]byte(js), &c); err != nil || c.RolloutDropout {
			t.Errorf("config %s: rollout_dropout %v (%v), want false", js, c.RolloutDropout, err)
		}
		var oc OfflineConfig
		if err := json.Unmarshal([]byte(js), &oc); err != nil || oc.RolloutDropout {
			t.Errorf("offline config %s: rollout_dropout %v (%v), want false", js, oc.RolloutDropout, err)
		}
	}
	// An MBPO config with it is invalid (there is no ADM).
	c, _ := Preset("quick", "hopper", "mbpo", 3)
	c.RolloutDropout = true
	if c.Validate() == nil {
		t.Error("mbpo with rollout_dropout validated")
	}

	// The dynamics: both engines roll out with the authors' p and the fit
	// validates with it; off, neither.
	ortskip.IfMissing(t)
	for _, on := range []bool{true, false} {
		for _, engine := range []string{"direct", "incremental"} {
			cfg, _ := Preset("quick", "hopper", "admpo", 3)
			cfg.ADMHidden, cfg.ADMLayers, cfg.ADMResBlocks, cfg.M = 8, 1, 1, 2
			cfg.Engine, cfg.RolloutDropout = engine, on
			dyn, err := dynamics.NewADM(cfg.dynamicsConfig(), 11, 3)
			if err != nil {
				t.Fatal(err)
			}
			d := dyn.(*dynamics.ADM)
			want := 0.0
			if on {
				want = authorsDropout
			}
			if d.RolloutDropout != want || d.FitCfg.HoldoutDropout != on || d.FitCfg.Dropout != authorsDropout {
				t.Errorf("%s on=%v: roll-out dropout %v, holdout dropout %v, fit dropout %v", engine, on, d.RolloutDropout,
					d.FitCfg.HoldoutDropout, d.FitCfg.Dropout)
			}
			r, err := d.Roller(infer.Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			got := r.(interface{ Dropout() float64 }).Dropout()
			r.Close()
			if got != want {
				t.Errorf("%s on=%v: the engine rolls out with dropout %v, want %v", engine, on, got, want)
			}
		}
	}
}
