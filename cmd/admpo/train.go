package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/experiments"
	"github.com/admpo/admpo/rundir"
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
	diagnose, diagPolicy, diagBuffer           *string
	steps, diagStarts                          *int
	seed                                       *int64
	dryRun, tb, diagNoDropout                  *bool
	envTimeout                                 *time.Duration
	ov                                         *overrides
}

// newOnlineFlags returns train online's flag set (also what admpo sweep
// checks a grid against).
func newOnlineFlags() (*pflag.FlagSet, *onlineFlags) {
	fs := newFlags("train online")
	f := &onlineFlags{}
	f.env = fs.String("env", "hopper", "task (see: admpo envs list), or a remote environment's server: tcp://HOST:PORT or\n"+
		"unix:///PATH (python3 -m admpo_env MODULE:FACTORY, admpo envs serve; docs/remote-envs.md)")
	f.envFile = fs.String("env-file", "", "train on the task in this file instead of --env: "+envs.TaskFileHelp+
		"\n(the run records the file's path and SHA-256 with its model's: --resume and export need it unchanged)")
	f.envTimeout = fs.Duration("env-timeout", remote.DefaultTimeout, "a remote environment's longest wait for a connection or an answer\n"+
		"(recorded in config.json; the run checkpoints and stops when it passes; with --resume: the new\ntimeout, recorded in its place; without: the recorded one holds)")
	f.termination = fs.String("termination", "", "model roll-outs' termination rule: task (the task's rule on observations),\n"+
		"none or learned (fitted on the terminals seen); default: task, or learned for a remote environment\n"+
		"and for a task file whose rule reads values the observation leaves out")
	f.algo = fs.String("algo", "admpo", "admpo, mbpo or sac")
	f.preset = fs.String("preset", "quick", "paper, cpu or quick")
	f.steps = fs.Int("steps", 0, "learning env steps after the warm-up (total env steps = --warmup + --steps;\n"+
		"default: the preset's); with --resume, the run's new length")
	f.seed = fs.Int64("seed", 0, "random seed")
	f.out = fs.String("out", "", "run directory (default runs/ENV-ALGO-SEED)")
	f.resume = fs.String("resume", "", "continue the run in this directory from its last checkpoint (only --steps, --tensorboard,\n--device and --env-timeout may be given with it; --device moves its SAC updates and model fits to that device:\ncheckpoints are alike on every device; --env-timeout replaces a remote environment's recorded timeout)")
	f.diagnose = fs.String("diagnose", "", "measure an admpo/mbpo run's model (ADM or ensemble) against the simulator at its last\n"+
		"checkpoint, finished or not (writes DIR/diagnosis.json; only --diagnose-* and --seed may be given with it)")
	f.diagStarts = fs.Int("diagnose-starts", 2000, "roll-out starts for --diagnose, drawn from the run's real replay buffer")
	f.diagPolicy = fs.String("diagnose-policy", "", "with --diagnose: roll out this run's final policy (a run directory: while it trains, its\n"+
		"actor at its last checkpoint; or an ONNX actor) instead of the diagnosed run's actor, to compare two runs' models on the same states and actions")
	f.diagBuffer = fs.String("diagnose-buffer", "", "with --diagnose: draw the starts from this online run's real replay buffer (same task)\n"+
		"instead of the diagnosed run's own, so that two runs' models start from the same states")
	f.diagNoDropout = fs.Bool("diagnose-no-dropout", false, noDropoutHelp)
	f.dryRun = fs.Bool("dry-run", false, "print the resolved config (config.json's content) and exit without creating the run")
	f.tb = addTensorBoardFlag(fs, "env step")
	f.configPath = fs.String("config", "", configHelp)
	f.ov = addOverrides(fs, onlineFields(&train.OnlineConfig{}))
	bound(fs, atLeast1, "steps", "diagnose-starts")
	bound(fs, anyNum, "seed")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
	return fs, f
}

func trainOnline(args []string) error {
	fs, f := newOnlineFlags()
	steps, seed, out, resume := f.steps, f.seed, f.out, f.resume
	dryRun, tb, ov, envTimeout := f.dryRun, f.tb, f.ov, f.envTimeout
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := diagnoseFlags(fs); err != nil {
		return err
	}
	if *f.diagnose != "" {
		return diagnoseOnline(*f.diagnose, experiments.DiagnoseOptions{Starts: *f.diagStarts, Seed: *seed,
			Policy: *f.diagPolicy, Buffer: *f.diagBuffer, NoDropout: *f.diagNoDropout})
	}
	var o *train.Online
	var err error
	var fresh *freshStart // a fresh run's start, undone when it fails before recording anything
	if *resume != "" {
		// A longer run grows the real replay buffer: check that it fits first.
		setSteps := func(o *train.Online, n int) error {
			c := o.Cfg
			c.Steps = n
			od, ad := 0, 0
			if r := c.Remote; r != nil { // a remote environment's sizes as its server announced them
				od, ad = r.ObsDim, r.ActDim
			} else if task, err := c.Task(); err == nil { // a built-in task or the run's task file
				od, ad = task.ObsDim, task.ActDim
			}
			if od > 0 {
				if err := checkResources(fs, c.MemoryParts(od, ad), c.Threads, c.BLASThreads); err != nil {
					return err
				}
			}
			return o.SetSteps(n)
		}
		open := func(dir, device string) (*train.Online, error) {
			opt := train.ResumeOptions{Device: device}
			if fs.Changed("env-timeout") { // else the recorded timeout holds
				opt.EnvTimeout = *envTimeout
			}
			o, err := train.ResumeOnlineWith(dir, opt)
			if errors.Is(err, train.ErrNotRemote) {
				return nil, usageErr(fmt.Errorf("--env-timeout: %w", err))
			}
			return o, err
		}
		if o, err = resumeRun(fs, *resume, "steps", *steps, open, setSteps, "env-timeout"); err != nil {
			return err
		}
		fmt.Printf("resuming %s at env step %d of %d\n", *resume, o.Step(), o.Cfg.TotalSteps())
	} else {
		ch, err := pickOnlineEnv(fs, f)
		if err != nil {
			return err
		}
		cf, envName, envFile, termination := ch.cf, ch.env, ch.envFile, ch.termination
		algoName, presetName := ch.algo, ch.preset
		task, rem, err := onlineEnv(envName, envFile, &termination, *envTimeout, true)
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
			if rem != nil {
				cfg.Remote = rem
			} else if fs.Changed("env-timeout") {
				cfg.Remote = &train.RemoteEnv{} // refused by Validate: not a remote env
			}
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
		dir := newRunDir(*out, fmt.Sprintf("%s-%s-%d", envRunName(cfg.Env), cfg.Algo, cfg.Seed))
		fresh = noteFreshStart(dir)
		if o, err = train.NewOnline(cfg, dir); err != nil {
			if !fresh.before[rundir.ConfigFile] { // not a run's directory already
				return fresh.failedStart(err)
			}
			return err
		}
		printRunConfig(dir, o.Cfg.JSON())
	}
	o.SetTensorBoard(*tb)
	return runToEnd(o, o.Dir, o.Cfg.TotalSteps(), "env step", fresh)
}

// diagnoseFlags is a usage error when a train command's parsed flags fs
// give a --diagnose-* flag without --diagnose, or beside --diagnose a flag
// other than the command's --diagnose-* flags and --seed (a diagnosis
// trains nothing). train online and train offline share it.
func diagnoseFlags(fs *pflag.FlagSet) error {
	var bad, diag string
	fs.Visit(func(f *pflag.Flag) {
		switch {
		case strings.HasPrefix(f.Name, "diagnose-"):
			if diag == "" {
				diag = f.Name
			}
		case f.Name != "diagnose" && f.Name != "seed" && bad == "":
			bad = f.Name
		}
	})
	switch {
	case !fs.Changed("diagnose") && diag != "":
		return fmt.Errorf("%w: %s: --%s needs --diagnose RUN_DIR", errUsage, fs.Name(), diag)
	case fs.Changed("diagnose") && bad != "":
		var may []string
		fs.VisitAll(func(f *pflag.Flag) {
			if strings.HasPrefix(f.Name, "diagnose-") {
				may = append(may, "--"+f.Name)
			}
		})
		return fmt.Errorf("%w: %s: --%s cannot be given with --diagnose (only %s and --seed may)",
			errUsage, fs.Name(), bad, strings.Join(may, ", "))
	case fs.Changed("diagnose") && fs.Lookup("diagnose").Value.String() == "":
		return fmt.Errorf("%w: %s: --diagnose needs a run directory", errUsage, fs.Name())
	}
	return nil
}

// noDropoutHelp is --diagnose-no-dropout's help, train online's and train
// offline's.
const noDropoutHelp = "with --diagnose: roll the ADM out without MC dropout even when the run's roll-outs use it\n" +
	"(rollout_dropout), to tell its means' error from the masks'; no effect on a run without dropout\n" +
	"(writes DIR/diagnosis-nodropout.json, or diagnosis-with-NAME-nodropout.json)"

// diagnoseOnline prints an online run's model error against the simulator
// (experiments.DiagnoseOnline); what it cannot diagnose (no run in dir, a
// sac run, a model never fitted, a start buffer of another task, a policy
// that cannot be read) is a usage error.
func diagnoseOnline(dir string, opt experiments.DiagnoseOptions) error {
	d, err := experiments.DiagnoseOnline(dir, opt)
	if errors.Is(err, experiments.ErrCannotDiagnose) {
		return usageErr(err)
	}
	if err != nil {
		return err
	}
	printDiagnosis(dir, d, "the run's actor at its last checkpoint", "replay buffer states")
	return nil
}

// onlineChoice is what a new online run's flags and --config file choose
// before the config is built: the file, the environment (a built-in task or
// a remote environment's address, or a task file), the termination rule,
// the algorithm and the preset.
type onlineChoice struct {
	cf                                      *configFile
	env, envFile, termination, algo, preset string
}

// pickOnlineEnv reads train online's parsed flags fs (f) and its --config
// file into the run's choices: a flag wins over the file's key; --env and
// --env-file together are a usage error, and --env overrides the file's
// env_file.
func pickOnlineEnv(fs *pflag.FlagSet, f *onlineFlags) (onlineChoice, error) {
	var c onlineChoice
	cf, err := readConfigFile(*f.configPath, &train.OnlineConfig{})
	if err != nil {
		return c, err
	}
	c.cf = cf
	if err := cf.pickAll(fs, flagOrKey{&c.env, "env", "env", *f.env}, flagOrKey{&c.algo, "algo", "algo", *f.algo},
		flagOrKey{&c.preset, "preset", "preset", *f.preset}, flagOrKey{&c.envFile, "env-file", "env_file", *f.envFile},
		flagOrKey{&c.termination, "termination", "termination", *f.termination}); err != nil {
		return c, err
	}
	if fs.Changed("env") && fs.Changed("env-file") {
		return c, usageErr(fmt.Errorf("--env and --env-file cannot both be given"))
	}
	if fs.Changed("env") {
		c.envFile = "" // a config file's env_file gives way to --env
	}
	return c, nil
}

// onlineEnv resolves the environment a new online run plays, given by
// exactly one of: a task file (file), a remote environment's address
// (name: tcp://HOST:PORT or unix:///PATH), or a built-in task (name). For a
// remote environment it returns a task with the address as its name (and
// preset base) and the sizes its server announces (a server that is down is
// an error naming it, before anything is created), with the remote
// environment's record for config.json (nil otherwise). It resolves the
// roll-outs' termination rule *term: "" is the task's rule or, for a task
// file without a rule on observations and for a remote environment (which
// has none), learned; "task" is recorded as "" for a built-in task.
// Without dial, a remote environment's address is only parsed (for checks
// made where its server may be out of reach): the task then has no sizes
// and the record is nil.
func onlineEnv(name, file string, term *string, timeout time.Duration, dial bool) (*envs.Task, *train.RemoteEnv, error) {
	switch *term {
	case "", "task", "none", "learned":
	default:
		return nil, nil, usageErr(fmt.Errorf("--termination %q: want task, none or learned", *term))
	}
	if file != "" && remote.IsAddress(name) {
		return nil, nil, usageErr(fmt.Errorf("env %s and env file %s: give one, a remote environment or a task file", name, file))
	}
	if file == "" && remote.IsAddress(name) {
		switch *term {
		case "":
			*term = "learned"
		case "task":
			return nil, nil, usageErr(fmt.Errorf("--env %s: a remote environment has no termination rule on observations for model roll-outs: use --termination learned or none", name))
		}
		if !dial {
			if _, _, err := remote.ParseAddress(name); err != nil {
				return nil, nil, usageErr(err)
			}
			return &envs.Task{Name: name, Preset: name}, nil, nil
		}
		c, err := remote.Dial(name, timeout)
		if err != nil {
			return nil, nil, err
		}
		defer c.Close()
		r, err := train.NewRemoteEnv(c.Spec, timeout)
		if err != nil {
			return nil, nil, err
		}
		return &envs.Task{Name: name, Preset: name, ObsDim: r.ObsDim, ActDim: r.ActDim}, r, nil
	}
	if file == "" {
		t, err := lookupTask(name)
		if err != nil {
			return nil, nil, err
		}
		if *term == "task" {
			*term = ""
		}
		// A built-in task's Preset names no base: its own presets.
		c := *t
		c.Preset = t.Name
		return &c, nil, nil
	}
	t, err := envs.LoadTaskFile(file)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	switch {
	case *term == "" && t.Done == nil:
		*term = "learned"
	case *term == "":
		*term = "task"
	case *term == "task" && t.Done == nil:
		return nil, nil, usageErr(fmt.Errorf("--env-file %s: the termination rule reads values the observation leaves out, so model roll-outs cannot apply it: use --termination learned or none", file))
	}
	return t, nil, nil
}

// envRunName is an environment's part of a default run directory name: the
// task, or remote-HOST-PORT / remote-SOCKET for a remote environment.
func envRunName(env string) string {
	network, addr, err := remote.ParseAddress(env)
	if err != nil {
		return env
	}
	if network == "unix" {
		addr = strings.TrimSuffix(filepath.Base(addr), filepath.Ext(addr))
	}
	return "remote-" + strings.NewReplacer(":", "-", "/", "-", "[", "", "]", "").Replace(addr)
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
