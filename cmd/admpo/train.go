package main

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/train"
)

func runTrain(args []string) error {
	if done, err := groupHelp(args, "Usage: admpo train online|offline [flags]   (see admpo train online --help, admpo train offline --help)\n",
		"train needs a sub-command: online or offline"); done {
		return err
	}
	switch args[0] {
	case "online":
		return trainOnline(args[1:])
	case "offline":
		return trainOffline(args[1:])
	}
	return fmt.Errorf("%w: train: unknown sub-command %q (online or offline)", errUsage, args[0])
}

// overrides registers one flag per tunable online config value; unset
// flags keep the preset's value.
type overrides struct {
	*overrideFlags
	hidden    *[]int
	warmStart *bool
	auto      *bool
	dropout   *bool
}

// rolloutDropoutHelp is --rollout-dropout's help (online and offline).
const rolloutDropoutHelp = "admpo: keep the ADM's ResBlock dropout (0.1) on in roll-outs, U^ADM and the fit's holdout\n" +
	"validation, as the authors' code does (it never puts the model in eval mode); the masks are seeded,\n" +
	"so runs stay reproducible; unset: the preset's (paper: on; quick: off)"

func addOverrides(fs *pflag.FlagSet) *overrides {
	o := &overrides{overrideFlags: newOverrideFlags(fs)}
	o.addInt("warmup", "uniform random env steps before learning (not counted in --steps)", nonNeg)
	o.addInt("updates-per-step", "policy updates per env step (G)", nonNeg)
	o.addInt("batch", "SAC batch size", atLeast1)
	o.addFloat("real-ratio", "share of real transitions in each batch", unit)
	o.addFloat("target-entropy", "SAC target entropy of the actions in the task's units (the authors' log-probability\n"+
		"includes the action scale: Humanoid's +-0.4 bounds add 17 log 2.5 nats to its entropy)", anyNum)
	o.addInt("actor-every", "critic updates per actor and alpha update (authors' actor_freq: 20 on walker2d, ant, humanoid)", atLeast1)
	o.addFloat("alpha", "initial entropy coefficient (fixed with --auto-alpha=false; paper: 1, the authors' log alpha 0)", positive)
	o.auto = fs.Bool("auto-alpha", true, "tune the entropy coefficient towards the target entropy; unset: the preset's (paper and quick: tuned)")
	o.addFloat("lr", "learning rate of actor, critics and alpha", positive)
	o.addFloat("tau", "Polyak rate of the target critics", span{Lo: 0, Hi: 1, Open: true})
	o.hidden = fs.IntSlice("hidden", nil, "SAC hidden layer sizes, e.g. 256,256")
	bound(fs, atLeast1, "hidden")
	o.addInt("model-every", "env steps between model fits and roll-outs", atLeast1)
	o.addInt("rollout-batch", "start sequences per roll-out", atLeast1)
	o.addString("rollout-schedule", "roll-out length schedule a->b:x->y (learning steps a to b after the warm-up, length x to y)")
	o.addInt("model-retain", "roll-out rounds the model buffer keeps (authors: model_retain_steps / interval)", atLeast1)
	o.addInt("m", "ADM maximum backtracking length", atLeast1)
	o.addInt("adm-hidden", "ADM GRU width", atLeast1)
	o.addInt("adm-layers", "ADM GRU layers", atLeast1)
	o.addInt("adm-res-blocks", "ADM head ResBlocks", nonNeg)
	o.addInt("ensemble", "MBPO ensemble members", atLeast1)
	o.addInt("elites", "MBPO elite members", atLeast1)
	o.addFloat("model-lr", "ADM learning rate (the ensemble uses MBPO's 1e-3)", positive)
	o.warmStart = fs.Bool("model-warm-start", false, "ADM: keep training across fits instead of re-initialising (default: the preset's)")
	o.addInt("model-max-epochs", "cap on epochs per model fit (0: until early stop)", nonNeg)
	o.addInt("model-patience", "model fit epochs without holdout improvement before stopping", atLeast1)
	o.addInt("model-epoch-steps", "cap on Adam steps per model fit epoch, each followed by a holdout check (0: full passes)", nonNeg)
	o.addFloat("model-steps-per-row", "Adam steps per fit = this x new real transitions since the last fit (0: no cap, fit to early stop)", nonNeg)
	o.addInt("model-epoch-passes", "passes over the ADM's train starts per fit epoch (paper: m, as the authors' epoch)", atLeast1)
	o.addString("model-improve", "ADM early-stopping test: scaled (variance-scaled holdout MSE) or authors (some k and the mean over k improved)")
	o.addInt("model-max-holdout", "most transitions (ensemble) or start states (ADM) held out per fit", nonNeg)
	o.addString("engine", "ADM roll-out engine: incremental or direct")
	o.dropout = fs.Bool("rollout-dropout", false, rolloutDropoutHelp)
	o.addInt("eval-every", "env steps between evaluations", atLeast1)
	o.addInt("eval-episodes", "deterministic episodes per evaluation", atLeast1)
	o.addInt("checkpoint-every", "env steps between checkpoints", atLeast1)
	o.addInt("threads", "ONNX Runtime threads for roll-outs (0: its default)", nonNeg)
	o.addInt("blas-threads", "OpenBLAS threads for training (presets: 1)", nonNeg)
	o.addString("provider", "ONNX Runtime provider for roll-outs: cpu or cuda")
	return o
}

func (o *overrides) apply(c *train.OnlineConfig) error {
	o.copyGiven(map[string]*int{"warmup": &c.WarmUp, "updates-per-step": &c.UpdatesPerStep, "batch": &c.Batch,
		"model-every": &c.ModelEvery, "rollout-batch": &c.RolloutBatch, "m": &c.M, "adm-hidden": &c.ADMHidden,
		"adm-layers": &c.ADMLayers, "eval-every": &c.EvalEvery, "eval-episodes": &c.EvalEpisodes,
		"checkpoint-every": &c.CheckpointEvery, "threads": &c.Threads, "blas-threads": &c.BLASThreads,
		"model-retain": &c.ModelRetain, "adm-res-blocks": &c.ADMResBlocks, "ensemble": &c.Ensemble, "elites": &c.Elites,
		"model-max-epochs": &c.ModelMaxEpochs, "model-patience": &c.ModelPatience, "model-max-holdout": &c.ModelMaxHold,
		"actor-every": &c.ActorEvery, "model-epoch-passes": &c.ModelEpochPasses, "model-epoch-steps": &c.ModelEpochSteps},
		map[string]*float64{"real-ratio": &c.RealRatio, "target-entropy": &c.TargetEntropy, "lr": &c.LR,
			"tau": &c.Tau, "model-lr": &c.ModelLR, "alpha": &c.Alpha, "model-steps-per-row": &c.ModelStepsPerRow},
		map[string]*string{"engine": &c.Engine, "provider": &c.Provider, "model-improve": &c.ModelImprove})
	if o.fs.Changed("auto-alpha") {
		c.AutoAlpha = *o.auto
	}
	if o.fs.Changed("hidden") {
		c.Hidden = *o.hidden
	}
	if o.fs.Changed("model-warm-start") {
		c.ModelWarmStart = *o.warmStart
	}
	if o.fs.Changed("rollout-dropout") {
		c.RolloutDropout = *o.dropout
	}
	if v, ok := o.given("rollout-schedule"); ok {
		s, err := train.ParseSchedule(v)
		if err != nil {
			return usageErr(err)
		}
		c.Rollout = s
	}
	return nil
}

// onlineFlags are train online's flags.
type onlineFlags struct {
	env, algo, preset, out, resume, configPath *string
	steps                                      *int
	seed                                       *int64
	dryRun, tb                                 *bool
	ov                                         *overrides
}

// newOnlineFlags returns train online's flag set (also what admpo sweep
// checks a grid against).
func newOnlineFlags() (*pflag.FlagSet, *onlineFlags) {
	fs := newFlags("train online")
	f := &onlineFlags{}
	f.env = fs.String("env", "hopper", "task (see: admpo envs list)")
	f.algo = fs.String("algo", "admpo", "admpo, mbpo or sac")
	f.preset = fs.String("preset", "quick", "paper, cpu or quick")
	f.steps = fs.Int("steps", 0, "learning env steps after the warm-up (total env steps = --warmup + --steps;\n"+
		"default: the preset's); with --resume, the run's new length")
	f.seed = fs.Int64("seed", 0, "random seed")
	f.out = fs.String("out", "", "run directory (default runs/ENV-ALGO-SEED)")
	f.resume = fs.String("resume", "", "continue the run in this directory from its last checkpoint (only --steps may be given with it)")
	f.dryRun = fs.Bool("dry-run", false, "print the resolved config (config.json's content) and exit without creating the run")
	f.tb = addTensorBoardFlag(fs, "env step")
	f.configPath = fs.String("config", "", configHelp)
	f.ov = addOverrides(fs)
	bound(fs, atLeast1, "steps")
	bound(fs, anyNum, "seed")
	return fs, f
}

func trainOnline(args []string) error {
	fs, f := newOnlineFlags()
	env, algo, preset, steps, seed, out, resume := f.env, f.algo, f.preset, f.steps, f.seed, f.out, f.resume
	dryRun, tb, configPath, ov := f.dryRun, f.tb, f.configPath, f.ov
	if err := parse(fs, args); err != nil {
		return err
	}
	var o *train.Online
	var err error
	if *resume != "" {
		if o, err = resumeRun(fs, *resume, "steps", *steps, train.ResumeOnline, (*train.Online).SetSteps); err != nil {
			return err
		}
		fmt.Printf("resuming %s at env step %d of %d\n", *resume, o.Step(), o.Cfg.TotalSteps())
	} else {
		var cf *configFile
		if *configPath != "" {
			if cf, err = readConfigFile(*configPath, &train.OnlineConfig{}); err != nil {
				return err
			}
		}
		var envName, algoName, presetName string
		if err := cf.pickAll(fs, flagOrKey{&envName, "env", "env", *env}, flagOrKey{&algoName, "algo", "algo", *algo},
			flagOrKey{&presetName, "preset", "preset", *preset}); err != nil {
			return err
		}
		task, err := envs.Lookup(envName)
		if err != nil {
			return usageErr(err)
		}
		cfg, err := train.Preset(presetName, task.Name, algoName, task.ActDim)
		if err != nil {
			return usageErr(err)
		}
		cfg.Seed = *seed
		if err := cf.apply((*plainOnline)(&cfg)); err != nil {
			return err
		}
		if err := cf.legacyDefaults(&cfg); err != nil {
			return err
		}
		cfg.Env, cfg.Algo, cfg.Preset = task.Name, algoName, presetName
		if fs.Changed("seed") {
			cfg.Seed = *seed
		}
		if fs.Changed("steps") {
			cfg.Steps = *steps
		}
		if err := ov.apply(&cfg); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return usageErr(err)
		}
		if *dryRun {
			_, err := os.Stdout.Write(cfg.JSON())
			return err
		}
		dir := newRunDir(*out, fmt.Sprintf("%s-%s-%d", cfg.Env, cfg.Algo, cfg.Seed))
		if o, err = train.NewOnline(cfg, dir); err != nil {
			return err
		}
		printRunConfig(dir, o.Cfg.JSON())
	}
	o.SetTensorBoard(*tb)
	return runToEnd(o, o.Dir, o.Cfg.TotalSteps(), "env step")
}

// statusPrinter shows a progress bar on a terminal and periodic log lines
// otherwise; event messages (evaluations, model fits) are always printed.
func statusPrinter(total, done int) func(train.Status) {
	tty := term.IsTerminal(int(os.Stdout.Fd()))
	start, last := time.Now(), time.Now()
	var bar *progressbar.ProgressBar
	if tty {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stdout), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString("steps"), progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
		bar.Set(done)
	}
	return func(s train.Status) {
		desc := fmt.Sprintf("eval %s | model %s | H %d", fmtNaN(s.LastEval, "%.1f"), fmtNaN(s.ModelLoss, "%.3f"), s.RolloutLen)
		if tty {
			if s.Message != "" {
				bar.Clear()
				fmt.Println(s.Message)
			}
			bar.Describe(desc)
			bar.Set(s.Step)
			return
		}
		if s.Message != "" {
			fmt.Println(s.Message)
		}
		if time.Since(last) > 10*time.Second || s.Step == s.Steps {
			last = time.Now()
			rate := float64(s.Step-done) / time.Since(start).Seconds()
			eta := time.Duration(float64(s.Steps-s.Step)/math.Max(rate, 1e-9)) * time.Second
			fmt.Printf("step %d/%d (%.0f steps/s, ETA %s) %s\n", s.Step, s.Steps, rate, eta.Round(time.Second), desc)
		}
	}
}

func fmtNaN(v float64, f string) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(f, v)
}
