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
	return runGroup(args, "Usage: admpo train online|offline [flags]   (see admpo train online --help, admpo train offline --help)\n",
		"train needs a sub-command: online or offline", "train: unknown sub-command %q (online or offline)",
		map[string]func([]string) error{"online": trainOnline, "offline": trainOffline})
}

// onlineFlags are train online's flags.
type onlineFlags struct {
	env, algo, preset, out, resume, configPath *string
	envFile, termination                       *string
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
	f.envFile = fs.String("env-file", "", "train on the task in this file instead of --env: "+envs.TaskFileHelp+
		"\n(the run records the file's path and SHA-256 with its model's: --resume and export need it unchanged)")
	f.termination = fs.String("termination", "", "model roll-outs' termination rule: task (the task's rule on observations),\n"+
		"none or learned (fitted on the terminals seen); default: task, or learned for a task file whose\n"+
		"rule reads values the observation leaves out")
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
	f.ov = addOverrides(fs, onlineFields(&train.OnlineConfig{}))
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
		// A longer run grows the real replay buffer: check that it fits first.
		setSteps := func(o *train.Online, n int) error {
			c := o.Cfg
			c.Steps = n
			if task, err := envs.Lookup(c.Env); err == nil {
				if err := checkResources(fs, c.MemoryParts(task.ObsDim, task.ActDim), c.Threads, c.BLASThreads); err != nil {
					return err
				}
			}
			return o.SetSteps(n)
		}
		if o, err = resumeRun(fs, *resume, "steps", *steps, train.ResumeOnline, setSteps); err != nil {
			return err
		}
		fmt.Printf("resuming %s at env step %d of %d\n", *resume, o.Step(), o.Cfg.TotalSteps())
	} else {
		cf, err := readConfigFile(*configPath, &train.OnlineConfig{})
		if err != nil {
			return err
		}
		var envName, algoName, presetName, envFile, termination string
		if err := cf.pickAll(fs, flagOrKey{&envName, "env", "env", *env}, flagOrKey{&algoName, "algo", "algo", *algo},
			flagOrKey{&presetName, "preset", "preset", *preset}, flagOrKey{&envFile, "env-file", "env_file", *f.envFile},
			flagOrKey{&termination, "termination", "termination", *f.termination}); err != nil {
			return err
		}
		if fs.Changed("env") && fs.Changed("env-file") {
			return usageErr(fmt.Errorf("--env and --env-file cannot both be given"))
		}
		if fs.Changed("env") {
			envFile = "" // a config file's env_file gives way to --env
		}
		task, err := onlineTask(envName, envFile, &termination)
		if err != nil {
			return err
		}
		cfg, err := train.Preset(presetName, task.Preset, algoName, task.ActDim)
		if err != nil {
			return usageErr(err)
		}
		cfg.Seed = *seed
		if err := layerConfig(cf, &cfg, (*plainOnline)(&cfg), func() {
			cfg.Env, cfg.Algo, cfg.Preset = task.Name, algoName, presetName
			cfg.EnvFile, cfg.EnvDigest, cfg.Termination = task.File, task.Digest, termination
			if fs.Changed("seed") {
				cfg.Seed = *seed
			}
			if fs.Changed("steps") {
				cfg.Steps = *steps
			}
		}, ov, onlineFields(&cfg)); err != nil {
			return err
		}
		if err := checkResources(fs, cfg.MemoryParts(task.ObsDim, task.ActDim), cfg.Threads, cfg.BLASThreads); err != nil {
			return err
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

// onlineTask returns the task a new online run plays: the task file file,
// else the built-in task name. It resolves the roll-outs' termination rule
// *term: "" is the task's rule or, for a task file without a rule on
// observations, learned; "task" is recorded as "" for a built-in task.
func onlineTask(name, file string, term *string) (*envs.Task, error) {
	switch *term {
	case "", "task", "none", "learned":
	default:
		return nil, usageErr(fmt.Errorf("--termination %q: want task, none or learned", *term))
	}
	if file == "" {
		t, err := lookupTask(name)
		if err != nil {
			return nil, err
		}
		if *term == "task" {
			*term = ""
		}
		// A built-in task's Preset names no base: its own presets.
		c := *t
		c.Preset = t.Name
		return &c, nil
	}
	t, err := envs.LoadTaskFile(file)
	if err != nil {
		return nil, usageErr(err)
	}
	switch {
	case *term == "" && t.Done == nil:
		*term = "learned"
	case *term == "":
		*term = "task"
	case *term == "task" && t.Done == nil:
		return nil, usageErr(fmt.Errorf("--env-file %s: the termination rule reads values the observation leaves out, so model roll-outs cannot apply it: use --termination learned or none", file))
	}
	return t, nil
}

// statusPrinter shows a progress bar on a terminal and periodic log lines
// otherwise; event messages (evaluations, model fits) are always printed.
// done is the step the run starts from (a resumed run's). The log lines'
// rate and ETA count from the last status before the step first moved, so
// neither the steps a resumed run had done before nor an offline run's
// model fit (statuses at step 0) skew them.
func statusPrinter(total, done int) func(train.Status) {
	tty := term.IsTerminal(int(os.Stdout.Fd()))
	start, last := clock(), clock()
	startStep := -1
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
		now := clock()
		if startStep < 0 || s.Step == startStep { // from when the steps start to move (after an offline run's fit)
			startStep, start = s.Step, now
		}
		if now.Sub(last) > 10*time.Second || s.Step == s.Steps {
			last = now
			rate := float64(s.Step-startStep) / math.Max(now.Sub(start).Seconds(), 1e-9)
			eta := "-"
			if rate > 0 {
				eta = (time.Duration(float64(s.Steps-s.Step)/rate) * time.Second).Round(time.Second).String()
			}
			fmt.Printf("step %d/%d (%.0f steps/s, ETA %s) %s\n", s.Step, s.Steps, rate, eta, desc)
		}
	}
}

// clock is the time statusPrinter reads (a test sets it).
var clock = time.Now

func fmtNaN(v float64, f string) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(f, v)
}
