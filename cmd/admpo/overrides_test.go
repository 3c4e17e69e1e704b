package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/train"
)

// TestOnlineOverridesReachTheConfig sets every online override flag to a
// value no preset uses and checks, through config.json's keys, that each
// one changed exactly its own field: a flag that is registered but never
// copied into the config would leave its key unchanged.
func TestOnlineOverridesReachTheConfig(t *testing.T) {
	want := map[string]string{ // flag -> config.json key
		"warmup": "warmup_steps", "updates-per-step": "updates_per_step", "batch": "batch",
		"real-ratio": "real_ratio", "target-entropy": "target_entropy", "lr": "lr", "tau": "tau",
		"hidden": "hidden", "model-every": "model_every", "rollout-batch": "rollout_batch",
		"rollout-schedule": "rollout_schedule", "model-retain": "model_retain", "m": "m",
		"adm-hidden": "adm_hidden", "adm-layers": "adm_layers", "adm-res-blocks": "adm_res_blocks",
		"ensemble": "ensemble", "elites": "elites", "model-lr": "model_lr", "model-warm-start": "model_warm_start",
		"model-max-epochs": "model_max_epochs", "model-patience": "model_patience",
		"model-max-holdout": "model_max_holdout", "engine": "engine", "eval-every": "eval_every",
		"eval-episodes": "eval_episodes", "checkpoint-every": "checkpoint_every", "threads": "threads",
		"blas-threads": "blas_threads", "provider": "provider", "actor-every": "actor_every", "alpha": "alpha",
		"auto-alpha": "auto_alpha", "model-epoch-passes": "model_epoch_passes", "model-improve": "model_improve",
		"model-epoch-steps": "model_epoch_steps", "model-steps-per-row": "model_steps_per_row",
		"rollout-dropout": "rollout_dropout",
	}
	values := map[string]string{"real-ratio": "0.123", "target-entropy": "-7.5", "lr": "0.00077", "tau": "0.0123",
		"model-lr": "0.00055", "hidden": "17,19", "rollout-schedule": "11->22:3->4", "engine": "incremental",
		"provider": "cuda", "model-warm-start": "false", "auto-alpha": "false", "model-improve": "authors", "alpha": "0.37",
		"model-steps-per-row": "0.37", "rollout-dropout": "true"}
	base, err := train.Preset("quick", "hopper", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(c train.OnlineConfig) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(c.JSON(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := decode(base)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addOverrides(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		key, ok := want[f.Name]
		if !ok {
			t.Errorf("flag --%s has no expected config key in this test", f.Name)
			return
		}
		n++
		c := base
		c.Hidden = append([]int(nil), base.Hidden...)
		one := pflag.NewFlagSet("one", pflag.ContinueOnError)
		o1 := addOverrides(one)
		v, ok := values[f.Name]
		if !ok {
			v = "37"
		}
		if err := one.Parse([]string{"--" + f.Name + "=" + v}); err != nil {
			t.Fatalf("--%s=%s: %v", f.Name, v, err)
		}
		if err := o1.apply(&c); err != nil {
			t.Fatalf("--%s=%s: %v", f.Name, v, err)
		}
		after := decode(c)
		for k := range after {
			if changed := !reflect.DeepEqual(before[k], after[k]); changed != (k == key) {
				t.Errorf("--%s=%s: config key %q changed: %v (%v -> %v)", f.Name, v, k, changed, before[k], after[k])
			}
		}
	})
	if n != len(want) {
		t.Errorf("%d override flags registered, the test expects %d", n, len(want))
	}
}
