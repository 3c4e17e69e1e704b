package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/train"
)

// flagKind is how an override flag reads its value and which config field
// type it sets.
type flagKind int

const (
	intFlag      flagKind = iota // an int, into an int field
	floatFlag                    // a float64, into a float64 field
	stringFlag                   // a string, into a string field
	boolFlag                     // a bool, into a bool field
	sizesFlag                    // positive ints, e.g. 256,256 (pflag's ints), into a []int field
	sizesText                    // positive ints read from a string flag, e.g. 256,256, into a []int field
	scheduleFlag                 // a roll-out schedule a->b:x->y (train.ParseSchedule), into a train.Schedule field
)

// overrideFlag is one row of overrideTable: a flag that replaces one config
// value when it is given, so unset flags keep the preset's value.
type overrideFlag struct {
	name string
	kind flagKind
	s    span // the allowed values of numeric and sizes flags
	help string
	// on is a boolFlag's default as --help shows it (unset, the flag
	// still keeps the preset's value).
	on bool
	// only names the one command (its flag set's name) whose flag this row
	// is, where commands' flags of one name differ in kind or in what their
	// presets do; empty: the row of every command that binds the name.
	only string
}

// The commands that take override flags (their flag sets' names).
const (
	onlineCmd  = "train online"
	offlineCmd = "train offline"
	mSweepCmd  = "experiment m-sweep"
)

// hiddenHelp is --hidden's help (online and offline).
const hiddenHelp = "actor and critic hidden layer sizes, e.g. 256,256"

// overrideTable declares every override flag once; a command registers the
// rows it binds, in this order (its --help order).
var overrideTable = []overrideFlag{
	{name: "warmup", kind: intFlag, s: nonNeg, help: "uniform random env steps before learning (not counted in --steps)"},
	{name: "updates-per-step", kind: intFlag, s: nonNeg, help: "policy updates per env step (G)"},
	{name: "epochs", kind: intFlag, s: atLeast1, help: "epochs (default: the preset's)", only: mSweepCmd},
	{name: "steps-per-epoch", kind: intFlag, s: atLeast1, help: "policy updates per epoch (one per step)"},
	{name: "batch", kind: intFlag, s: atLeast1, help: "batch size of each policy (SAC or BC) update"},
	{name: "real-ratio", kind: floatFlag, s: unit, help: "share of real transitions (the env's online, the data set's offline) in each SAC batch"},
	{name: "target-entropy", kind: floatFlag, s: anyNum, help: "SAC target entropy of the actions in the task's units (the authors' log-probability\n" +
		"includes the action scale: Humanoid's +-0.4 bounds add 17 log 2.5 nats to its entropy)"},
	{name: "actor-every", kind: intFlag, s: atLeast1, help: "critic updates per actor and alpha update (authors' actor_freq: 20 on walker2d, ant, humanoid)"},
	{name: "alpha", kind: floatFlag, s: positive, help: "initial entropy coefficient (fixed with --auto-alpha=false; online paper: 1, the authors' log alpha 0)"},
	{name: "auto-alpha", kind: boolFlag, on: true, only: onlineCmd,
		help: "tune the entropy coefficient towards the target entropy; unset: the preset's (paper and quick: tuned)"},
	{name: "auto-alpha", kind: boolFlag, on: true, only: offlineCmd, help: "tune the entropy coefficient towards the target entropy; unset: the preset's\n" +
		"(paper admpo: fixed at the authors' alpha of the data set; quick and mopo: tuned from 0.2)"},
	{name: "lr", kind: floatFlag, s: positive, help: "learning rate of actor, critics and alpha"},
	{name: "actor-lr", kind: floatFlag, s: positive, help: "actor learning rate (decayed by --actor-lr-schedule for SAC; constant for BC)"},
	{name: "actor-lr-schedule", kind: stringFlag, help: "actor learning rate schedule: cosine-epoch (the authors': cosine to 0 over the run,\n" +
		"stepped once per epoch), cosine (stepped every update) or constant"},
	{name: "critic-lr", kind: floatFlag, s: positive, help: "critic learning rate"},
	{name: "alpha-lr", kind: floatFlag, s: positive, help: "entropy coefficient learning rate"},
	{name: "tau", kind: floatFlag, s: span{Lo: 0, Hi: 1, Open: true}, help: "Polyak rate of the target critics"},
	{name: "gamma", kind: floatFlag, s: span{Lo: 0, Hi: 1, Open: true}, help: "discount"},
	// --hidden was an ints flag online and a string flag offline; both kinds stay.
	{name: "hidden", kind: sizesFlag, s: atLeast1, help: hiddenHelp, only: onlineCmd},
	{name: "hidden", kind: sizesText, help: hiddenHelp, only: offlineCmd},
	{name: "model-every", kind: intFlag, s: atLeast1, help: "env steps between model fits and roll-outs"},
	{name: "rollout-every", kind: intFlag, s: atLeast1, help: "policy updates between model roll-outs"},
	{name: "rollout-batch", kind: intFlag, s: atLeast1, help: "start sequences per roll-out"},
	{name: "rollout-schedule", kind: scheduleFlag,
		help: "roll-out length schedule a->b:x->y (learning steps a to b after the warm-up, length x to y)"},
	{name: "horizon", kind: intFlag, s: atLeast1, help: "roll-out length H"},
	{name: "penalty", kind: floatFlag, s: nonNeg, help: "reward penalty coefficient beta (r - beta*U)"},
	{name: "model-retain", kind: intFlag, s: atLeast1, help: "roll-out rounds the model buffer keeps (online authors: model_retain_steps / interval)"},
	{name: "m", kind: intFlag, s: atLeast1, help: "ADM maximum backtracking length"},
	{name: "adm-hidden", kind: intFlag, s: atLeast1, help: "ADM GRU width"},
	{name: "adm-layers", kind: intFlag, s: atLeast1, help: "ADM GRU layers"},
	{name: "adm-res-blocks", kind: intFlag, s: nonNeg, help: "ADM head ResBlocks"},
	{name: "ensemble", kind: intFlag, s: atLeast1, help: "MBPO / MOPO ensemble members"},
	{name: "elites", kind: intFlag, s: atLeast1, help: "MBPO / MOPO elite members"},
	{name: "model-lr", kind: floatFlag, s: positive, help: "ADM learning rate (admpo; the ensemble's is --ensemble-lr)"},
	{name: "ensemble-lr", kind: floatFlag, s: positive, help: "MBPO / MOPO ensemble learning rate (preset: MBPO's 1e-3)"},
	{name: "model-warm-start", kind: boolFlag,
		help: "ADM: keep training across fits instead of re-initialising (default: the preset's)"},
	{name: "model-max-epochs", kind: intFlag, s: nonNeg, help: "cap on epochs per model fit (0: until early stop)"},
	{name: "model-patience", kind: intFlag, s: atLeast1, help: "model fit epochs without holdout improvement before stopping"},
	{name: "model-epoch-steps", kind: intFlag, s: nonNeg,
		help: "cap on Adam steps per model fit epoch, each followed by a holdout check (0: full passes)"},
	{name: "model-steps-per-row", kind: floatFlag, s: nonNeg,
		help: "Adam steps per fit = this x new real transitions since the last fit (0: no cap, fit to early stop)"},
	{name: "model-epoch-passes", kind: intFlag, s: atLeast1, help: "passes over the ADM's train starts per fit epoch (paper: m, as the authors' epoch)"},
	{name: "model-improve", kind: stringFlag,
		help: "ADM early-stopping test: scaled (variance-scaled holdout MSE) or authors (some k and the mean over k improved)"},
	{name: "model-fit-k", kind: stringFlag,
		help: "what each ADM Adam step trains: all (every k = 1..m of its start states at once; the default,\n" +
			"every preset's) or one (the authors' step: one k drawn per Adam step from the seeded fit rng, the\n" +
			"GRU unrolled k steps and the head at step k only; cheaper per step; CPU only, not with --device)"},
	{name: "model-max-holdout", kind: intFlag, s: nonNeg, help: "most transitions (ensemble) or start states (ADM) held out per fit"},
	{name: "engine", kind: stringFlag, help: "ADM roll-out engine: incremental or direct"},
	{name: "rollout-dropout", kind: boolFlag, help: "admpo: keep the ADM's ResBlock dropout (0.1) on in roll-outs, U^ADM and the fit's holdout\n" +
		"validation, as the authors' code does (it never puts the model in eval mode); the masks are seeded,\n" +
		"so runs stay reproducible; unset: the preset's (paper: on; quick: off)"},
	{name: "eval-every", kind: intFlag, s: atLeast1, help: "env steps between evaluations"},
	{name: "eval-episodes", kind: intFlag, s: atLeast1, help: "deterministic episodes per evaluation"},
	{name: "checkpoint-every", kind: intFlag, s: atLeast1, help: "run steps (online: env steps; offline: policy updates) between checkpoints; online runs and offline model fits also checkpoint every 10 minutes of wall time"},
	{name: "threads", kind: intFlag, s: nonNeg, help: "ONNX Runtime threads for roll-outs (0: its default)"},
	{name: "blas-threads", kind: intFlag, s: nonNeg, help: "threads for training's matrix products (large products split over rows; 0: OpenBLAS's default, the CPU count; presets: 1)"},
	{name: "provider", kind: stringFlag, help: "ONNX Runtime provider for roll-outs: cpu or cuda"},
	{name: "device", kind: stringFlag, help: "where SAC's gradient updates run: cpu (default), emu (the device learner emulated on the\n" +
		"host, for checks) or cuda (the GPU; a binary built with the admpo_cuda tag); BC's steps and the\n" +
		"ADM's and the ensemble's fits train there too; on cuda each SAC update, BC step, ADM and ensemble\n" +
		"step is recorded once as a CUDA graph and replayed (2-2.7x faster on an H100; the environment\n" +
		"variable ADMPO_DEVICE_GRAPH=0 turns graphs off, =1 forces them, also on emu)"},
	{name: "rollout-device", kind: stringFlag, help: "admpo: roll the ADM out on a device instead of ONNX Runtime (the default, unset: ONNX Runtime\n" +
		"on --provider): emu (the device kernels emulated on the host, for checks) or cuda (the GPU; a binary\n" +
		"built with the admpo_cuda tag), in the style of the run's engine (direct or incremental); the actor, the\n" +
		"ADM's plans, the sample, U^ADM and the task's termination rule (a learned one: on the host) run there,\n" +
		"the random numbers are drawn on the host in ONNX Runtime's order, so a seed gives ONNX Runtime's\n" +
		"transitions within float32 rounding for the same chunk rows (8192 start rows a step on emu, as\n" +
		"ONNX Runtime's cpu; 131072 on cuda, where ONNX Runtime's cuda takes 32768); shares --device's device\n" +
		"when they name the same; mbpo's and mopo's ensemble rolls out on ONNX Runtime only"},
}

// fieldTypeOk tells whether p is a pointer to the config field type that
// flags of kind k set.
func (k flagKind) fieldTypeOk(p any) bool {
	switch p.(type) {
	case *int:
		return k == intFlag
	case *float64:
		return k == floatFlag
	case *string:
		return k == stringFlag
	case *bool:
		return k == boolFlag
	case *[]int:
		return k == sizesFlag || k == sizesText
	case *train.Schedule:
		return k == scheduleFlag
	}
	return false
}

// onlineFields binds train online's override flags to c's fields.
func onlineFields(c *train.OnlineConfig) map[string]any {
	fields := map[string]any{
		"warmup": &c.WarmUp, "updates-per-step": &c.UpdatesPerStep, "batch": &c.Batch, "real-ratio": &c.RealRatio,
		"target-entropy": &c.TargetEntropy, "actor-every": &c.ActorEvery, "alpha": &c.Alpha, "auto-alpha": &c.AutoAlpha,
		"lr": &c.LR, "tau": &c.Tau, "hidden": &c.Hidden, "model-every": &c.ModelEvery, "rollout-batch": &c.RolloutBatch,
		"rollout-schedule": &c.Rollout, "model-retain": &c.ModelRetain, "model-max-holdout": &c.ModelMaxHold,
		"model-warm-start": &c.ModelWarmStart, "model-steps-per-row": &c.ModelStepsPerRow, "eval-every": &c.EvalEvery,
	}
	maps.Copy(fields, modelFields(&c.ModelSettings))
	maps.Copy(fields, runtimeFields(&c.RuntimeSettings))
	return fields
}

// offlineFields binds train offline's override flags to c's fields.
func offlineFields(c *train.OfflineConfig) map[string]any {
	fields := map[string]any{
		"steps-per-epoch": &c.StepsPerEpoch, "batch": &c.Batch, "real-ratio": &c.RealRatio,
		"target-entropy": &c.TargetEntropy, "alpha": &c.Alpha, "auto-alpha": &c.AutoAlpha, "actor-lr": &c.ActorLR,
		"actor-lr-schedule": &c.ActorLRSchedule, "critic-lr": &c.CriticLR, "alpha-lr": &c.AlphaLR, "gamma": &c.Gamma,
		"hidden": &c.Hidden, "rollout-every": &c.RolloutEvery, "rollout-batch": &c.RolloutBatch, "horizon": &c.Horizon,
		"penalty": &c.Penalty, "model-retain": &c.ModelRetain,
	}
	maps.Copy(fields, modelFields(&c.ModelSettings))
	maps.Copy(fields, runtimeFields(&c.RuntimeSettings))
	return fields
}

// modelFields binds the model override flags of both train commands to
// m's fields; --model-max-holdout is train online's only (offline runs
// keep the preset's).
func modelFields(m *train.ModelSettings) map[string]any {
	return map[string]any{
		"m": &m.M, "adm-hidden": &m.ADMHidden, "adm-layers": &m.ADMLayers, "adm-res-blocks": &m.ADMResBlocks,
		"ensemble": &m.Ensemble, "elites": &m.Elites, "model-lr": &m.ModelLR, "ensemble-lr": &m.EnsembleLR,
		"model-max-epochs": &m.ModelMaxEpochs, "model-patience": &m.ModelPatience, "model-epoch-steps": &m.ModelEpochSteps,
		"model-epoch-passes": &m.ModelEpochPasses, "model-improve": &m.ModelImprove, "engine": &m.Engine,
		"rollout-dropout": &m.RolloutDropout, "model-fit-k": &m.ModelFitK,
	}
}

// runtimeFields binds the runtime override flags of both train commands
// to r's fields.
func runtimeFields(r *train.RuntimeSettings) map[string]any {
	return map[string]any{
		"eval-episodes": &r.EvalEpisodes, "checkpoint-every": &r.CheckpointEvery, "threads": &r.Threads,
		"blas-threads": &r.BLASThreads, "provider": &r.Provider, "device": &r.Device,
		"rollout-device": &r.RolloutDevice,
	}
}

// mSweepFlags are the offline override flags that experiment m-sweep takes.
var mSweepFlags = []string{"epochs", "steps-per-epoch", "real-ratio", "rollout-batch", "horizon", "penalty",
	"adm-hidden", "adm-layers", "adm-res-blocks", "model-max-epochs", "model-patience", "eval-episodes"}

// mSweepFields binds experiment m-sweep's override flags to c's fields.
func mSweepFields(c *train.OfflineConfig) map[string]any {
	all := offlineFields(c)
	all["epochs"] = &c.Epochs
	out := map[string]any{}
	for _, name := range mSweepFlags {
		p, ok := all[name]
		if !ok {
			panic(fmt.Sprintf("admpo: m-sweep lists --%s, which binds no offline config field", name)) // a programming error
		}
		out[name] = p
	}
	return out
}

// overrides are a command's override flags: the overrideTable rows it
// binds, registered on its flag set.
type overrides struct {
	fs     *pflag.FlagSet
	rows   []overrideFlag
	values map[string]any // flag name -> the flag's value (*int, *float64, *string, *bool or *[]int)
}

// tableRows are the rows of overrideTable that command has for the names
// fields binds, in table order; a bound name without its row, or with a
// row whose kind sets another field type, is a programming error (panic).
func tableRows(command string, fields map[string]any) []overrideFlag {
	var rows []overrideFlag
	for _, r := range overrideTable {
		if p, ok := fields[r.name]; ok && (r.only == "" || r.only == command) {
			if !r.kind.fieldTypeOk(p) {
				panic(fmt.Sprintf("admpo %s: --%s (kind %d) is bound to a %T", command, r.name, r.kind, p))
			}
			rows = append(rows, r)
		}
	}
	for name := range fields {
		if !slices.ContainsFunc(rows, func(r overrideFlag) bool { return r.name == name }) {
			panic(fmt.Sprintf("admpo %s: --%s is bound but has no row in overrideTable", command, name))
		}
	}
	return rows
}

// addOverrides registers on fs (named for its command) one flag per name
// that fields binds, declared by its overrideTable row; fields may be
// built on a zero config (only its names count here).
func addOverrides(fs *pflag.FlagSet, fields map[string]any) *overrides {
	o := &overrides{fs: fs, rows: tableRows(fs.Name(), fields), values: map[string]any{}}
	for _, r := range o.rows {
		switch r.kind {
		case intFlag:
			o.values[r.name] = fs.Int(r.name, 0, r.help)
		case floatFlag:
			o.values[r.name] = fs.Float64(r.name, 0, r.help)
		case stringFlag, sizesText, scheduleFlag:
			o.values[r.name] = fs.String(r.name, "", r.help)
		case boolFlag:
			o.values[r.name] = fs.Bool(r.name, r.on, r.help)
		case sizesFlag:
			o.values[r.name] = fs.IntSlice(r.name, nil, r.help)
		}
		if r.kind == intFlag || r.kind == floatFlag || r.kind == sizesFlag {
			bound(fs, r.s, r.name)
		}
	}
	return o
}

// apply copies every given override flag into its field of fields (built
// on the config to change, with the names addOverrides was given).
func (o *overrides) apply(fields map[string]any) error {
	for _, r := range o.rows {
		if !o.fs.Changed(r.name) {
			continue
		}
		switch dst := fields[r.name].(type) {
		case *int:
			*dst = *o.values[r.name].(*int)
		case *float64:
			*dst = *o.values[r.name].(*float64)
		case *string:
			*dst = *o.values[r.name].(*string)
		case *bool:
			*dst = *o.values[r.name].(*bool)
		case *[]int:
			if r.kind == sizesFlag {
				*dst = *o.values[r.name].(*[]int)
				break
			}
			h, err := parseInts(*o.values[r.name].(*string))
			if err != nil {
				return fmt.Errorf("%w: --%s: %v", errUsage, r.name, err)
			}
			*dst = h
		case *train.Schedule:
			s, err := train.ParseSchedule(*o.values[r.name].(*string))
			if err != nil {
				return usageErr(err)
			}
			*dst = s
		default:
			return fmt.Errorf("admpo %s: --%s binds no config field", o.fs.Name(), r.name)
		}
	}
	return nil
}
