package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/train"
)

func init() {
	register(&command{name: "train", summary: "train online (ADMPO-ON, MBPO, SAC) or offline (ADMPO-OFF, MOPO, BC)", run: runTrain})
}

func runTrain(args []string) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(os.Stderr, "Usage: admpo train online|offline [flags]   (see admpo train online --help, admpo train offline --help)\n")
		if len(args) == 0 {
			return fmt.Errorf("%w: train needs a sub-command: online or offline", errUsage)
		}
		return nil
	}
	switch args[0] {
	case "online":
		return trainOnline(args[1:])
	case "offline":
		return trainOffline(args[1:])
	}
	return fmt.Errorf("%w: train: unknown sub-command %q (online or offline)", errUsage, args[0])
}

// overrides registers one flag per tunable config value; unset flags keep
// the preset's value.
type overrides struct {
	fs                                           *pflag.FlagSet
	warmup, updates, batch, modelEvery, rollouts *int
	m, admHidden, admLayers, evalEvery, evalEps  *int
	ckptEvery, threads, blasThreads              *int
	realRatio, entropy, lr, tau, modelLR         *float64
	schedule, engine, provider                   *string
	hidden                                       *[]int
	warm                                         *bool
}

func addOverrides(fs *pflag.FlagSet) *overrides {
	return &overrides{fs: fs,
		warmup:      fs.Int("warmup", 0, "uniform random env steps before learning"),
		updates:     fs.Int("updates-per-step", 0, "policy updates per env step (G)"),
		batch:       fs.Int("batch", 0, "SAC batch size"),
		realRatio:   fs.Float64("real-ratio", 0, "share of real transitions in each batch"),
		entropy:     fs.Float64("target-entropy", 0, "SAC target entropy"),
		lr:          fs.Float64("lr", 0, "learning rate of actor, critics, alpha and model"),
		hidden:      fs.IntSlice("hidden", nil, "SAC hidden layer sizes, e.g. 256,256"),
		modelEvery:  fs.Int("model-every", 0, "env steps between model fits and roll-outs"),
		rollouts:    fs.Int("rollout-batch", 0, "start sequences per roll-out"),
		schedule:    fs.String("rollout-schedule", "", "roll-out length schedule a->b:x->y (env steps a to b, length x to y)"),
		m:           fs.Int("m", 0, "ADM maximum backtracking length"),
		admHidden:   fs.Int("adm-hidden", 0, "ADM GRU width"),
		admLayers:   fs.Int("adm-layers", 0, "ADM GRU layers"),
		engine:      fs.String("engine", "", "ADM roll-out engine: incremental or direct"),
		evalEvery:   fs.Int("eval-every", 0, "env steps between evaluations"),
		evalEps:     fs.Int("eval-episodes", 0, "deterministic episodes per evaluation"),
		ckptEvery:   fs.Int("checkpoint-every", 0, "env steps between checkpoints"),
		threads:     fs.Int("threads", 0, "ONNX Runtime threads for roll-outs (0: its default)"),
		blasThreads: fs.Int("blas-threads", 0, "OpenBLAS threads for training (presets: 1)"),
		provider:    fs.String("provider", "", "ONNX Runtime provider for roll-outs: cpu or cuda"),
	}
}

func (o *overrides) apply(c *train.OnlineConfig) error {
	set := func(name string) bool { return o.fs.Changed(name) }
	ints := []struct {
		flag string
		src  *int
		dst  *int
	}{{"warmup", o.warmup, &c.WarmUp}, {"updates-per-step", o.updates, &c.UpdatesPerStep}, {"batch", o.batch, &c.Batch},
		{"model-every", o.modelEvery, &c.ModelEvery}, {"rollout-batch", o.rollouts, &c.RolloutBatch}, {"m", o.m, &c.M},
		{"adm-hidden", o.admHidden, &c.ADMHidden}, {"adm-layers", o.admLayers, &c.ADMLayers},
		{"eval-every", o.evalEvery, &c.EvalEvery}, {"eval-episodes", o.evalEps, &c.EvalEpisodes},
		{"checkpoint-every", o.ckptEvery, &c.CheckpointEvery}, {"threads", o.threads, &c.Threads},
		{"blas-threads", o.blasThreads, &c.BLASThreads}}
	for _, x := range ints {
		if set(x.flag) {
			*x.dst = *x.src
		}
	}
	if set("real-ratio") {
		c.RealRatio = *o.realRatio
	}
	if set("target-entropy") {
		c.TargetEntropy = *o.entropy
	}
	if set("lr") {
		c.LR = *o.lr
	}
	if set("model-warm-start") {
		c.ModelWarmStart = *o.warm
	}
	if set("model-lr") {
		c.ModelLR = *o.modelLR
	}
	if set("tau") {
		c.Tau = *o.tau
	}
	if set("hidden") {
		c.Hidden = *o.hidden
	}
	if set("engine") {
		c.Engine = *o.engine
	}
	if set("provider") {
		c.Provider = *o.provider
	}
	if set("rollout-schedule") {
		s, err := train.ParseSchedule(*o.schedule)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		c.Rollout = s
	}
	return nil
}

func trainOnline(args []string) error {
	fs := newFlags("train online", "train online --env hopper --algo admpo --steps 50000 --seed 0 --out runs/hopper-admpo-0",
		"Runs MBPO's loop with the Any-step Dynamics Model (--algo admpo), with MBPO's ensemble (mbpo), or\n"+
			"SAC without a model (sac). Values come from --preset (paper: the paper's per-task values;\n"+
			"quick: a small budget for two CPU cores) and every flag below overrides one. The resolved config\n"+
			"is printed and saved as OUT/config.json; progress goes to OUT/progress.csv and .jsonl, checkpoints\n"+
			"to OUT/checkpoint.ckpt, and the final policy (and model) to OUT/*.onnx.\n"+
			"Ctrl-C writes a checkpoint and exits; --resume OUT continues a stopped or killed run exactly.")
	env := fs.String("env", "hopper", "task (see: admpo envs list)")
	algo := fs.String("algo", "admpo", "admpo, mbpo or sac")
	preset := fs.String("preset", "quick", "paper or quick")
	steps := fs.Int("steps", 0, "total env steps (default: the preset's)")
	seed := fs.Int64("seed", 0, "random seed")
	out := fs.String("out", "", "run directory (default runs/ENV-ALGO-SEED)")
	resume := fs.String("resume", "", "continue the run in this directory from its last checkpoint")
	ov := addOverrides(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	var o *train.Online
	var err error
	if *resume != "" {
		if o, err = train.ResumeOnline(*resume); err != nil {
			return err
		}
		fmt.Printf("resuming %s at env step %d of %d\n", *resume, o.Step(), o.Cfg.Steps)
	} else {
		task, err := envs.Lookup(*env)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		cfg, err := train.Preset(*preset, task.Name, *algo, task.ActDim)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		cfg.Seed = *seed
		if *steps > 0 {
			cfg.Steps = *steps
		}
		if err := ov.apply(&cfg); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		dir := *out
		if dir == "" {
			dir = filepath.Join("runs", fmt.Sprintf("%s-%s-%d", cfg.Env, cfg.Algo, cfg.Seed))
		}
		fmt.Printf("config (saved to %s/config.json):\n%s", dir, cfg.JSON())
		if o, err = train.NewOnline(cfg, dir); err != nil {
			return err
		}
	}
	defer o.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.OnStatus(statusPrinter(o.Cfg.Steps, o.Step()))
	start := time.Now()
	err = o.Run(ctx)
	if errors.Is(err, train.ErrInterrupted) {
		fmt.Printf("\ninterrupted at env step %d: checkpoint written; continue with --resume %s\n", o.Step(), o.Dir)
		return err
	}
	if err != nil {
		return err
	}
	fmt.Printf("\ndone: %d env steps in %s; run directory %s\n", o.Cfg.Steps, time.Since(start).Round(time.Second), o.Dir)
	return nil
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
