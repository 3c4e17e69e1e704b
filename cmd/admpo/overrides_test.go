package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/train"
)

// overridesReachTheConfig sets every override flag of command to a value
// its preset (base) does not use and checks, through config.json's keys,
// that each one changed exactly its own field: a flag that is registered
// but never copied into the config, or copied into another field, would
// leave its key unchanged or change another. want maps every flag the
// command must have to its config.json key; values holds the flags' test
// values (default "37").
func overridesReachTheConfig[C any](t *testing.T, command string, base C, fields func(*C) map[string]any,
	encode func(C) []byte, want, values map[string]string) {
	t.Helper()
	decode := func(c C) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(encode(c), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := decode(base)
	var zero C
	fs := pflag.NewFlagSet(command, pflag.ContinueOnError)
	addOverrides(fs, fields(&zero))
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		key, ok := want[f.Name]
		if !ok {
			t.Errorf("%s: flag --%s has no expected config key in this test", command, f.Name)
			return
		}
		n++
		c := base // apply replaces slices, never writes into base's
		one := pflag.NewFlagSet(command, pflag.ContinueOnError)
		o1 := addOverrides(one, fields(&zero))
		v, ok := values[f.Name]
		if !ok {
			v = "37"
		}
		if err := one.Parse([]string{"--" + f.Name + "=" + v}); err != nil {
			t.Fatalf("%s --%s=%s: %v", command, f.Name, v, err)
		}
		if err := o1.apply(fields(&c)); err != nil {
			t.Fatalf("%s --%s=%s: %v", command, f.Name, v, err)
		}
		after := decode(c)
		for k := range after {
			if changed := !reflect.DeepEqual(before[k], after[k]); changed != (k == key) {
				t.Errorf("%s --%s=%s: config key %q changed: %v (%v -> %v)", command, f.Name, v, k, changed, before[k], after[k])
			}
		}
	})
	if n != len(want) {
		t.Errorf("%s: %d override flags registered, the test expects %d", command, n, len(want))
	}
}

// onlineWant maps train online's override flags to their config.json keys.
var onlineWant = map[string]string{
	"warmup": "warmup_steps", "updates-per-step": "updates_per_step", "batch": "batch",
	"real-ratio": "real_ratio", "target-entropy": "target_entropy", "lr": "lr", "tau": "tau",
	"hidden": "hidden", "model-every": "model_every", "rollout-batch": "rollout_batch",
	"rollout-schedule": "rollout_schedule", "model-retain": "model_retain", "m": "m",
	"adm-hidden": "adm_hidden", "adm-layers": "adm_layers", "adm-res-blocks": "adm_res_blocks",
	"ensemble": "ensemble", "elites": "elites", "model-lr": "model_lr", "ensemble-lr": "ensemble_lr", "model-warm-start": "model_warm_start",
	"model-max-epochs": "model_max_epochs", "model-patience": "model_patience",
	"model-max-holdout": "model_max_holdout", "engine": "engine", "eval-every": "eval_every",
	"eval-episodes": "eval_episodes", "checkpoint-every": "checkpoint_every", "threads": "threads",
	"blas-threads": "blas_threads", "provider": "provider", "device": "device", "actor-every": "actor_every", "alpha": "alpha",
	"auto-alpha": "auto_alpha", "model-epoch-passes": "model_epoch_passes", "model-improve": "model_improve",
	"model-epoch-steps": "model_epoch_steps", "model-steps-per-row": "model_steps_per_row",
	"rollout-dropout": "rollout_dropout", "model-fit-k": "model_fit_k", "rollout-device": "rollout_device",
}

// TestOnlineOverridesReachTheConfig: every train online override flag sets
// exactly its own config key.
func TestOnlineOverridesReachTheConfig(t *testing.T) {
	values := map[string]string{"real-ratio": "0.123", "target-entropy": "-7.5", "lr": "0.00077", "tau": "0.0123",
		"model-lr": "0.00055", "ensemble-lr": "0.00033", "hidden": "17,19", "rollout-schedule": "11->22:3->4", "engine": "incremental",
		"provider": "cuda", "device": "emu", "model-warm-start": "false", "auto-alpha": "false", "model-improve": "authors", "alpha": "0.37",
		"model-steps-per-row": "0.37", "rollout-dropout": "true", "model-fit-k": "one", "rollout-device": "emu"}
	base, err := train.Preset("quick", "hopper", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	overridesReachTheConfig(t, onlineCmd, base, onlineFields, train.OnlineConfig.JSON, onlineWant, values)
}

// offlineWant maps train offline's override flags to their config.json keys.
var offlineWant = map[string]string{
	"steps-per-epoch": "steps_per_epoch", "batch": "batch", "rollout-every": "rollout_every",
	"rollout-batch": "rollout_batch", "horizon": "horizon", "model-retain": "model_retain", "m": "m",
	"adm-hidden": "adm_hidden", "adm-layers": "adm_layers", "adm-res-blocks": "adm_res_blocks",
	"ensemble": "ensemble", "elites": "elites", "model-max-epochs": "model_max_epochs",
	"model-patience": "model_patience", "model-epoch-passes": "model_epoch_passes",
	"model-epoch-steps": "model_epoch_steps", "eval-episodes": "eval_episodes", "checkpoint-every": "checkpoint_every",
	"threads": "threads", "blas-threads": "blas_threads",
	"real-ratio": "real_ratio", "actor-lr": "actor_lr", "critic-lr": "critic_lr", "alpha-lr": "alpha_lr",
	"alpha": "alpha", "target-entropy": "target_entropy", "penalty": "penalty", "model-lr": "model_lr", "ensemble-lr": "ensemble_lr",
	"gamma": "gamma", "hidden": "hidden", "engine": "engine", "actor-lr-schedule": "actor_lr_schedule",
	"model-improve": "model_improve", "provider": "provider", "device": "device", "auto-alpha": "auto_alpha",
	"rollout-dropout": "rollout_dropout", "model-fit-k": "model_fit_k", "rollout-device": "rollout_device",
}

// offlineValues are test values of offline flags that no quick preset uses.
var offlineValues = map[string]string{"real-ratio": "0.123", "actor-lr": "0.00077", "critic-lr": "0.00066",
	"alpha-lr": "0.00044", "alpha": "0.37", "target-entropy": "-7.5", "penalty": "0.77", "model-lr": "0.00055", "ensemble-lr": "0.00033",
	"gamma": "0.77", "hidden": "17,19", "engine": "direct", "actor-lr-schedule": "constant", "model-improve": "authors",
	"provider": "cuda", "device": "emu", "auto-alpha": "false", "rollout-dropout": "true", "model-fit-k": "one",
	"rollout-device": "emu"}

// TestOfflineOverridesReachTheConfig: every train offline override flag
// sets exactly its own config key.
func TestOfflineOverridesReachTheConfig(t *testing.T) {
	base, err := train.OfflinePreset("quick", "hopper", "medium", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	overridesReachTheConfig(t, offlineCmd, base, offlineFields, train.OfflineConfig.JSON, offlineWant, offlineValues)
}

// TestMSweepOverridesReachTheConfig: every experiment m-sweep override flag
// sets exactly its own offline config key.
func TestMSweepOverridesReachTheConfig(t *testing.T) {
	base, err := train.OfflinePreset("quick", "hopper", "medium", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"epochs": "epochs"}
	for _, name := range []string{"steps-per-epoch", "rollout-batch", "horizon", "adm-hidden", "adm-layers",
		"adm-res-blocks", "model-max-epochs", "model-patience", "eval-episodes", "penalty", "real-ratio"} {
		want[name] = offlineWant[name]
	}
	overridesReachTheConfig(t, mSweepCmd, base, mSweepFields, train.OfflineConfig.JSON, want, offlineValues)
}

// TestOverrideTable: every row of overrideTable is a flag of a command that
// binds it, with the row's help and kind; no command has two rows of one
// name; and a name a command binds or lists without a row (or with a row of
// another field type) is refused.
func TestOverrideTable(t *testing.T) {
	fields := map[string]map[string]any{onlineCmd: onlineFields(&train.OnlineConfig{}),
		offlineCmd: offlineFields(&train.OfflineConfig{}), mSweepCmd: mSweepFields(&train.OfflineConfig{})}
	sets := map[string]*pflag.FlagSet{}
	for _, inv := range [][]string{{"train", "online"}, {"train", "offline"}, {"experiment", "m-sweep"}} {
		fs := flagsOf(t, inv)
		sets[fs.Name()] = fs
	}
	types := map[flagKind]string{intFlag: "int", floatFlag: "float64", stringFlag: "string", boolFlag: "bool",
		sizesFlag: "intSlice", sizesText: "string", scheduleFlag: "string"}
	seen := map[[2]string]bool{} // command, name
	for _, r := range overrideTable {
		used := false
		for cmd, fs := range sets {
			if _, ok := fields[cmd][r.name]; !ok || (r.only != "" && r.only != cmd) {
				continue
			}
			used = true
			if seen[[2]string{cmd, r.name}] {
				t.Errorf("%s has two rows for --%s", cmd, r.name)
			}
			seen[[2]string{cmd, r.name}] = true
			f := fs.Lookup(r.name)
			if f == nil || f.Usage != r.help || f.Value.Type() != types[r.kind] {
				t.Errorf("%s --%s: flag %+v, want the row's help and a %s", cmd, r.name, f, types[r.kind])
			}
		}
		if !used {
			t.Errorf("row --%s (only %q) is no command's flag", r.name, r.only)
		}
	}
	for cmd, f := range fields {
		if n := len(tableRows(cmd, f)); n != len(f) {
			t.Errorf("%s binds %d names, has %d rows", cmd, len(f), n)
		}
	}
	refused := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: not refused", name)
			}
		}()
		f()
	}
	var c train.OfflineConfig
	refused("a bound name without a row", func() { tableRows(offlineCmd, map[string]any{"no-such-flag": &c.Batch}) })
	refused("a row bound to another field type", func() { tableRows(offlineCmd, map[string]any{"batch": &c.Gamma}) })
	refused("the other command's row", func() { tableRows(offlineCmd, map[string]any{"epochs": &c.Epochs}) })
	refused("an m-sweep flag that binds no field", func() {
		defer func(old []string) { mSweepFlags = old }(mSweepFlags)
		mSweepFlags = append(slices.Clone(mSweepFlags), "warmup")
		mSweepFields(&c)
	})
}
