package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/experiments"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// offlineChoice is what train offline's flags (or a --config) say of a
// fresh run: the data set, its task and kind, and the run's algorithm.
type offlineChoice struct {
	dataset     string
	env         string // the data's built-in task (default: metadata or file name)
	envFile     string // the data's task is this task file's
	kind        string
	evalEnv     string        // a built-in task (or a remote environment's address) to evaluate data that name none in
	envTimeout  time.Duration // a remote environment's answer timeout
	termination string
	preset      string
	algo        string
}

// offlineConfig is the preset config for a data set file: its task from
// --env-file, --env, the metadata or the file name, and its kind from
// --kind, the metadata or the file name. Data that name no built-in task
// (bring your own) train without evaluation, or evaluated in --eval-env,
// with generic m, H and beta and a termination rule from the data; so do
// a task file's data (m, H and beta are the built-in data sets'), which
// are evaluated in it. note says what the user may want to know of the
// choice ("" for nothing).
func offlineConfig(ch offlineChoice) (cfg train.OfflineConfig, rows int, note string, err error) {
	path := ch.dataset
	d, err := datasets.Read(path)
	if err != nil {
		return cfg, rows, "", fmt.Errorf("train offline: %w", err) // missing, truncated or malformed file
	}
	if err := d.Validate(d.ObsDim, d.ActDim); err != nil {
		return cfg, rows, "", fmt.Errorf("train offline: %s: %w", path, err)
	}
	rows = d.N
	de, dk, _ := train.DatasetIdentity(path, d.Meta)
	if d.Meta["env_file"] != "" {
		de = "" // collected in a task file's task (admpo collect --env-file): not the built-in task of that name
	}
	if ch.env != "" {
		de = ch.env
	}
	if ch.kind != "" {
		dk = ch.kind
	}
	var task *envs.Task
	var rec *train.RemoteEnv // a remote environment's spec
	generic := true          // m, H, beta without a known data set
	switch {
	case ch.envFile != "" && (ch.env != "" || ch.evalEnv != ""):
		return cfg, rows, "", fmt.Errorf("%w: --env-file names the data's task: give it without --env and --eval-env", errUsage)
	case ch.evalEnv != "" && ch.env != "":
		return cfg, rows, "", fmt.Errorf("%w: --env names the data's task, --eval-env a task for data that name none: give one", errUsage)
	case ch.envFile != "":
		if task, err = envs.LoadTaskFile(ch.envFile); err != nil {
			return cfg, rows, "", usageErr(err)
		}
	case remote.IsAddress(ch.evalEnv):
		if task, rec, err = onlineEnv(ch.evalEnv, "", new(string), ch.envTimeout, true); err != nil {
			return cfg, rows, "", err
		}
	case ch.evalEnv != "":
		if task, err = lookupTask(ch.evalEnv); err != nil {
			return cfg, rows, "", err
		}
	case de != "":
		t, lerr := envs.Lookup(de)
		switch {
		case lerr != nil && ch.env != "":
			return cfg, rows, "", usageErr(lerr)
		case lerr == nil:
			task, generic = t, dk == ""
		}
	}
	if task != nil && (d.ObsDim != task.ObsDim || d.ActDim != task.ActDim) {
		return cfg, rows, "", fmt.Errorf("%w: %s holds %d observation and %d action values, the task %s has %d and %d",
			errUsage, path, d.ObsDim, d.ActDim, task.Name, task.ObsDim, task.ActDim)
	}
	if generic {
		cfg, err = train.OfflinePreset(ch.preset, "", dk, ch.algo, d.ActDim)
		name := d.Meta["name"]
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		cfg.Name = name
	} else {
		cfg, err = train.OfflinePreset(ch.preset, task.Name, dk, ch.algo, task.ActDim)
	}
	if err != nil {
		return cfg, rows, "", usageErr(err)
	}
	if task != nil {
		cfg.Env, cfg.EnvFile, cfg.EnvDigest, cfg.Remote = task.Name, task.File, task.Digest, rec
	}
	termination := ch.termination
	if termination == "" {
		termination = "none"
		if task != nil && task.Done != nil {
			termination = "task"
		} else if ch.algo != "bc" && slices.Contains(d.Terminal, true) { // BC rolls nothing out
			termination = "learned"
		}
	}
	if !slices.Contains(train.Terminations, termination) || (termination == "task" && task == nil) {
		return cfg, rows, "", fmt.Errorf("%w: --termination %q: want %s (task only with a task)", errUsage, termination, strings.Join(train.Terminations, ", "))
	}
	if termination == "task" && task.Done == nil {
		return cfg, rows, "", fmt.Errorf("%w: --termination task: %s has no termination rule on observations (a remote environment, or a task "+
			"file whose rule reads values the observation leaves out), so model roll-outs cannot apply one: use learned or none", errUsage, task.Name)
	}
	cfg.Dataset, cfg.Termination, cfg.ObsDim, cfg.ActDim = path, termination, d.ObsDim, d.ActDim
	if f := d.Meta["env_file"]; f != "" && task == nil {
		note = fmt.Sprintf("the data were collected in the task file %s: --env-file %s evaluates the run in it", f, f)
	}
	return cfg, rows, note, nil
}

// offlineFlags are train offline's flags.
type offlineFlags struct {
	dataset, env, envFile, kind, evalEnv, termination, algo, preset *string
	envTimeout                                                      *time.Duration
	out, resume, diagnose, diagPolicy, configPath                   *string
	epochs, diagStarts, diagEpisodes                                *int
	seed                                                            *int64
	dryRun, tb, diagNoDropout                                       *bool
	ov                                                              *overrides
}

// newOfflineFlags returns train offline's flag set (also what admpo sweep
// checks a grid against).
func newOfflineFlags() (*pflag.FlagSet, *offlineFlags) {
	fs := newFlags("train offline")
	f := &offlineFlags{}
	f.dataset = fs.String("dataset", "", "D4RL-layout HDF5 file or Minari data set directory (required unless --resume)")
	f.env = fs.String("env", "", "task of the data (default: the data set's metadata or file name)")
	f.envFile = fs.String("env-file", "", "the data's task is this task file's (admpo collect --env-file): evaluations play it (no D4RL score),\n"+
		"with generic m, H and beta and its termination rule when it reads the observation (else learned or none)")
	f.kind = fs.String("kind", "", "data set kind for the preset (default: metadata or file name)")
	f.evalEnv = fs.String("eval-env", "", "evaluate in this task a data set that names no task (sizes must match); generic m, H, beta;\n"+
		"or in a remote environment, tcp://HOST:PORT or unix:///PATH (returns; a failed server stops the run, --resume continues)")
	f.envTimeout = fs.Duration("env-timeout", remote.DefaultTimeout, "with --eval-env ADDRESS: the longest wait for a connection or an answer")
	f.termination = fs.String("termination", "", "termination rule of model roll-outs: task, none or learned\n"+
		"(default: task with a task; otherwise learned when the data hold terminals, else none; none for bc)")
	f.algo = fs.String("algo", "admpo", "admpo, mopo or bc")
	f.preset = fs.String("preset", "quick", "paper, cpu or quick (see above)")
	f.epochs = fs.Int("epochs", 0, "epochs (default: the preset's); with --resume, the run's new length")
	f.seed = fs.Int64("seed", 0, "random seed")
	f.out = fs.String("out", "", "run directory (default runs/offline-DATASET-ALGO-SEED)")
	f.resume = fs.String("resume", "", "continue the run in this directory from its last checkpoint (only --epochs, --tensorboard and\n--device may be given with it; --device moves its SAC updates, BC steps and model fits to that device)")
	f.diagnose = fs.String("diagnose", "", "measure a finished admpo/mopo run's model against the simulator (writes DIR/diagnosis.json)")
	f.diagStarts = fs.Int("diagnose-starts", 2000, "roll-out starts for --diagnose")
	f.diagEpisodes = fs.Int("diagnose-episodes", 20, "with --diagnose: episodes of the policy in the task from each kind of start state\n"+
		"(the task's resets, the data set's episode starts, states within its episodes; 0: none)")
	f.diagPolicy = fs.String("diagnose-policy", "", "with --diagnose: roll out this run's final policy (a run directory: while it trains, its\n"+
		"actor at its last checkpoint; or an ONNX actor) instead of the diagnosed run's own, to compare two runs' models on the same states and actions")
	f.diagNoDropout = fs.Bool("diagnose-no-dropout", false, noDropoutHelp)
	f.dryRun = fs.Bool("dry-run", false, "print the resolved config (config.json's content) and exit without creating the run")
	f.tb = addTensorBoardFlag(fs, "policy update")
	f.configPath = fs.String("config", "", configHelp+"; --dataset replaces the file's data keys\n"+
		"(dataset, dataset_name, obs_dim, act_dim, action_low, action_high, termination_model; an empty env)")
	f.ov = addOverrides(fs, offlineFields(&train.OfflineConfig{}))
	bound(fs, atLeast1, "epochs", "diagnose-starts")
	bound(fs, anyNum, "seed")
	bound(fs, nonNeg, "diagnose-episodes")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
	return fs, f
}

func trainOffline(args []string) error {
	fs, f := newOfflineFlags()
	dataset, env, kind, evalEnv, termination, algo, preset := f.dataset, f.env, f.kind, f.evalEnv, f.termination, f.algo, f.preset
	epochs, seed, out, resume, diagnose, diagStarts, diagPolicy := f.epochs, f.seed, f.out, f.resume, f.diagnose, f.diagStarts, f.diagPolicy
	dryRun, tb, configPath, ov := f.dryRun, f.tb, f.configPath, f.ov
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := diagnoseFlags(fs); err != nil {
		return err
	}
	if *diagnose != "" {
		return diagnoseOffline(*diagnose, experiments.DiagnoseOptions{Starts: *diagStarts, Seed: *seed, Policy: *diagPolicy,
			StartEpisodes: *f.diagEpisodes, NoDropout: *f.diagNoDropout})
	}
	var o *train.Offline
	var fresh *freshStart // a fresh run's start, undone when it fails before recording anything
	var err error
	if *resume != "" {
		if o, err = resumeRun(fs, *resume, "epochs", *epochs, train.ResumeOfflineOn, (*train.Offline).SetEpochs); err != nil {
			return err
		}
		fmt.Printf("resuming %s at update %d of %d\n", *resume, o.Step(), o.Cfg.TotalSteps())
	} else {
		cf, err := readConfigFile(*configPath, &train.OfflineConfig{})
		if err != nil {
			return err
		}
		// Flags given replace the file's keys they set, or derive.
		envKeys := []string{"env", "env_file", "env_file_sha256"}
		for flag, keys := range map[string][]string{"dataset": {"dataset", "dataset_name", "obs_dim", "act_dim", "action_low",
			"action_high", "termination_model"}, "env": envKeys, "eval-env": envKeys, "env-file": envKeys, "kind": {"dataset_kind"},
			"termination": {"termination", "termination_model"}, "algo": {"algo"}, "preset": {"preset"}} {
			if fs.Changed(flag) {
				cf.drop(keys...)
			}
		}
		if e, _ := cf.str("env"); e == "" && fs.Changed("dataset") {
			cf.drop("env") // the old data named no task; the new data may
		}
		var ds, envName, envFileName, kindName, term, algoName, presetName string
		if err := cf.pickAll(fs, flagOrKey{&ds, "dataset", "dataset", *dataset}, flagOrKey{&envName, "env", "env", *env},
			flagOrKey{&envFileName, "env-file", "env_file", *f.envFile},
			flagOrKey{&kindName, "kind", "dataset_kind", *kind}, flagOrKey{&term, "termination", "termination", *termination},
			flagOrKey{&algoName, "algo", "algo", *algo}, flagOrKey{&presetName, "preset", "preset", *preset}); err != nil {
			return err
		}
		if ds == "" {
			return fmt.Errorf("%w: train offline needs --dataset FILE (or --resume DIR, or a --config naming the dataset)", errUsage)
		}
		if envFileName != "" && !fs.Changed("env-file") {
			envName = "" // the config's task file names its task
		}
		if fs.Changed("env-timeout") && !remote.IsAddress(*evalEnv) {
			return fmt.Errorf("%w: --env-timeout is for --eval-env ADDRESS (a remote environment)", errUsage)
		}
		cfg, rows, note, err := offlineConfig(offlineChoice{dataset: ds, env: envName, envFile: envFileName, kind: kindName,
			evalEnv: *evalEnv, envTimeout: *f.envTimeout, termination: term, preset: presetName, algo: algoName})
		if err != nil {
			return err
		}
		cfg.Seed = *seed
		if err := layerConfig(cf, &cfg, (*plainOffline)(&cfg), func() {
			if fs.Changed("seed") {
				cfg.Seed = *seed
			}
			if fs.Changed("epochs") {
				cfg.Epochs = *epochs
			}
		}, ov, offlineFields(&cfg)); err != nil {
			return err
		}
		if err := checkResources(fs, cfg.MemoryParts(cfg.ObsDim, cfg.ActDim, rows), cfg.Threads, cfg.BLASThreads); err != nil {
			return err
		}
		if *dryRun {
			_, err := os.Stdout.Write(cfg.JSON())
			return err
		}
		dir := *out
		if dir == "" {
			dir = filepath.Join("runs", fmt.Sprintf("offline-%s-%s-%d", cfg.Name, cfg.Algo, cfg.Seed))
		}
		fresh = noteFreshStart(dir)
		if o, err = train.NewOffline(cfg, dir); err != nil {
			err = fmt.Errorf("train offline: %w", err)
			if !fresh.before[rundir.ConfigFile] { // not a run's directory already
				return fresh.failedStart(err)
			}
			return err
		}
		printRunConfig(dir, o.Cfg.JSON())
		if o.Cfg.Env == "" {
			fmt.Printf("%s names no built-in task: no evaluation (see --eval-env), termination %s, generic m/H/beta unless set\n",
				cfg.Dataset, o.Cfg.Termination)
		}
		if note != "" {
			fmt.Println(note)
		}
		if m := o.Cfg.TermModel; m != nil {
			fmt.Printf("learned termination: logistic regression on %d next observations (%d terminal): accuracy %.4f, recall of terminals %.3f\n",
				m.Rows, m.Terminals, m.Accuracy, m.Recall)
		}
	}
	o.SetTensorBoard(*tb)
	return runToEnd(o, o.Dir, o.Cfg.TotalSteps(), "update", fresh)
}

// diagnoseOffline prints a run's model error against the simulator by
// roll-out step and its correlation with the run's uncertainty U.
func diagnoseOffline(dir string, opt experiments.DiagnoseOptions) error {
	d, err := experiments.DiagnoseOffline(dir, opt)
	if err != nil {
		return err
	}
	printDiagnosis(dir, d, "the run's final policy", "data set states")
	return nil
}

// printDiagnosis prints the diagnosis d of the run in dir: own names the
// run's own policy, starts the states the roll-outs start from.
func printDiagnosis(dir string, d *experiments.Diagnosis, own, starts string) {
	who := own
	if d.Policy != "own" {
		who = "the policy " + d.Policy
	}
	drop := "without MC dropout"
	if d.Dropout {
		drop = "with MC dropout"
	}
	fmt.Printf("%s (%s): %d model transitions of %s (%s), replayed in the simulator (%d with clipped velocities left out)\n",
		dir, d.Algo, d.Transitions, who, drop, d.SkippedClipped)
	penalty := ""
	if d.Penalty != 0 {
		penalty = fmt.Sprintf(" (beta %.3g: penalty %.4f)", d.Penalty, d.Penalty*d.UMean)
	}
	fmt.Printf("  error (RMS of s'_model - s'_real) %.4f, of the model's mean (mu_model - s'_real) %.4f\n", d.ErrMean, d.MeanErrMean)
	fmt.Printf("  U %.4f%s, |reward error| %.4f, termination agreement %.3f\n", d.UMean, penalty, d.RewErrMean, d.DoneAgree)
	fmt.Printf("  correlation of U and the error: Pearson %.3f, Spearman %.3f\n", d.Corr, d.RankCorr)
	fmt.Println("  by roll-out step  h: transitions  error  mean's error  U  |reward error|")
	for _, p := range d.PerStep {
		fmt.Printf("    %2d: %6d  %.4f  %.4f  %.4f  %.4f\n", p.H, p.Transitions, p.ErrMean, p.MeanErrMean, p.UMean, p.RewErrMean)
	}
	fmt.Printf("  one step from %s (h = 1, k = 1): %d transitions, error %.4f, mean's error %.4f, U %.4f\n",
		starts, d.OneStep.Transitions, d.OneStep.ErrMean, d.OneStep.MeanErrMean, d.OneStep.UMean)
	fmt.Println("  by backtracking length  k: transitions  error  mean's error  U  |reward error|")
	for _, p := range d.PerK {
		fmt.Printf("    %2d: %6d  %.4f  %.4f  %.4f  %.4f\n", p.K, p.Transitions, p.ErrMean, p.MeanErrMean, p.UMean, p.RewErrMean)
	}
	fmt.Print("  by U quintile (U, error):")
	for _, g := range d.ByUQuintile {
		fmt.Printf(" (%.3f, %.3f)", g.UMean, g.ErrMean)
	}
	fmt.Println()
	if len(d.FromStarts) > 0 {
		fmt.Printf("  the policy in the task (deterministic, to termination or %d steps), by start state:\n", envs.MaxEpisodeSteps)
		fmt.Println("    from            episodes  mean steps  mean return  reached the limit")
		for _, s := range d.FromStarts {
			fmt.Printf("    %-14s  %8d  %10.1f  %11.1f  %5.0f%%\n", s.From, s.Episodes, s.MeanSteps, s.MeanReturn, 100*s.AtLimit)
		}
	}
}
