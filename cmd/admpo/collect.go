package main

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// policySource gives the medium and expert policies and the medium-replay
// data: the shipped policies, or a behaviour run.
type policySource interface {
	// policyFor returns the ONNX actor for kind "medium" or "expert" and its
	// description.
	policyFor(kind string, mediumReturn float64) (onnxBytes []byte, desc string, err error)
	// mediumReplay returns the medium policy's training replay buffer up
	// to its snapshot, capped at size rows (0: all), and its description.
	mediumReplay(size int, mediumReturn float64) (*datasets.Dataset, string, error)
}

// executable is os.Executable (a test replaces it).
var executable = os.Executable

// shippedDir is the directory of the shipped behaviour policies: the
// --policies folder when given (it must exist), else the first
// collect.ShippedDir holding a manifest of those under the working
// directory and under the admpo binary's directory and the three above it
// (bin/admpo of a checkout, or the checkout itself). The error says where
// it looked.
func shippedDir(flagValue string, given bool) (string, error) {
	if given {
		st, err := os.Stat(flagValue)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("--policies %s: the folder does not exist", flagValue)
		case err != nil:
			return "", fmt.Errorf("--policies: %w", err)
		case !st.IsDir():
			return "", fmt.Errorf("--policies %s is not a folder", flagValue)
		}
		return flagValue, nil
	}
	cands := []string{collect.ShippedDir}
	if exe, err := executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		for d, i := filepath.Dir(exe), 0; i < 4; d, i = filepath.Dir(d), i+1 {
			cands = append(cands, filepath.Join(d, collect.ShippedDir))
		}
	}
	var looked []string
	for _, c := range cands {
		abs, err := filepath.Abs(c)
		if err != nil || slices.Contains(looked, abs) {
			continue
		}
		looked = append(looked, abs)
		if st, err := os.Stat(filepath.Join(c, collect.ManifestName)); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("no shipped behaviour policies found: looked for %s in %s (run admpo from the repository, or give --policies DIR)",
		collect.ManifestName, strings.Join(looked, ", "))
}

// shippedSource reads the shipped behaviour policies of one task.
type shippedSource struct {
	dir, env string
	m        *collect.Manifest
}

func (s shippedSource) find(kind string) (collect.ShippedPolicy, error) {
	p, ok := s.m.Find(s.env, kind)
	if !ok {
		return p, fmt.Errorf("no %s-%s policy is shipped in %s (make one with a behaviour run, `admpo collect --train-dir DIR`, and `admpo promote --run DIR`; or collect from a run with --policy DIR)",
			s.env, kind, s.dir)
	}
	return p, nil
}

func (s shippedSource) policyFor(kind string, _ float64) ([]byte, string, error) {
	p, err := s.find(kind)
	if err != nil {
		return nil, "", err
	}
	b, err := p.Actor(s.dir)
	if err != nil {
		return nil, "", err
	}
	return b, fmt.Sprintf("%s/%s (shipped; SAC snapshot at env step %d of %s, seed %d; eval return %.1f, normalised %.1f; sha256 %s)",
		s.dir, p.File, p.Step, p.Source, p.Seed, p.EvalReturn, p.Score, p.SHA256), nil
}

func (s shippedSource) mediumReplay(size int, _ float64) (*datasets.Dataset, string, error) {
	p, err := s.find("medium")
	if err != nil {
		return nil, "", err
	}
	d, err := p.ReplayData(s.dir)
	if err != nil {
		return nil, "", err
	}
	if size > 0 && size < d.N {
		d = tailFromEpisodeStart(d, size)
	}
	return d, fmt.Sprintf("%s/%s (shipped; the training replay buffer up to the medium snapshot at env step %d; sha256 %s)",
		s.dir, p.Replay.File, p.Step, p.Replay.SHA256), nil
}

// behaviourSource is where medium and expert policies come from: a
// behaviour run (snapshots.json) or a plain `admpo train online` run.
type behaviourSource struct {
	dir string
	log *collect.BehaviourLog // nil for a plain online run
	run *train.Run            // the plain online run; nil for a behaviour run
}

func (b behaviourSource) policyFor(kind string, mediumReturn float64) ([]byte, string, error) {
	p, desc, _, err := b.snapshot(kind, mediumReturn)
	return p, desc, err
}

// snapshot returns the ONNX actor for kind "medium" or "expert", its
// description, and the env step it was taken at.
func (b behaviourSource) snapshot(kind string, mediumReturn float64) (onnxBytes []byte, desc string, step int, err error) {
	if b.log == nil {
		return b.run.Policy, fmt.Sprintf("%s/%s (final policy of an online run, env step %d)", b.dir, rundir.PolicyFile, b.run.Step), b.run.Step, nil
	}
	best, err := b.log.Best()
	if err != nil {
		return nil, "", 0, err
	}
	s := best
	if kind == "medium" {
		target := mediumReturn
		if target <= 0 {
			target = best.EvalReturn / 3
		}
		if s, err = b.log.Medium(target); err != nil {
			return nil, "", 0, err
		}
	}
	p, err := os.ReadFile(filepath.Join(b.dir, s.File))
	if err != nil {
		return nil, "", 0, err
	}
	return p, fmt.Sprintf("%s/%s (SAC snapshot at env step %d, eval return %.1f; best snapshot %.1f at step %d)",
		b.dir, s.File, s.Step, s.EvalReturn, best.EvalReturn, best.Step), s.Step, nil
}

func runCollect(args []string) error {
	fs := newFlags("collect")
	env := fs.String("env", "hopper", "task (see: admpo envs list), or a remote environment's server: tcp://HOST:PORT or unix:///PATH")
	envFile := fs.String("env-file", "", "collect in the task of this task file instead of --env (see: admpo envs show)")
	envTimeout := fs.Duration("env-timeout", remote.DefaultTimeout, "a remote environment's longest wait for a connection or an answer")
	kind := fs.String("kind", "random", strings.Join(train.DatasetKinds, ", "))
	size := fs.Int("size", 1000000, "transitions (medium-expert: of each half; medium-replay: cap keeping the newest, 0: all)")
	out := fs.String("out", "", "output .hdf5 file, or Minari directory with --format minari (default data/ENV-KIND.hdf5, data/ENV-KIND-v0)")
	format := fs.String("format", "d4rl", "d4rl (one HDF5 file) or minari (a Minari data set directory: data/main_data.hdf5 with\n"+
		"one group per episode, data/metadata.json)")
	seed := fs.Int64("seed", 0, "seed of the episodes' reset and action noise (and of a behaviour run)")
	workers := fs.Int("workers", 0, "goroutines running episodes, each with its own env (0: one per CPU; one for a remote\n"+
		"environment, whose server may run a single env, e.g. a robot); the data do not depend on it")
	policies := fs.String("policies", "", "directory of the shipped behaviour policies (manifest.json; default: "+collect.ShippedDir+"\n"+
		"under the working directory, else of the repository the admpo binary lies in)")
	policy := fs.String("policy", "", "run directory with the behaviour policy (a --train-dir, or an `admpo train online` run)")
	trainDir := fs.String("train-dir", "", "behaviour SAC run directory to train or reuse (default OUTDIR/behaviour-ENV-SEED)")
	trainSteps := fs.Int("train-steps", 100000, "env steps of the behaviour SAC run (a finished run that used its budget below --stop-return is extended to a larger value)")
	trainWarm := fs.Int("train-warmup", 5000, "uniform random steps at the start of the behaviour run")
	trainEvery := fs.Int("train-eval-every", 5000, "env steps between the behaviour run's evaluations and snapshots")
	stopReturn := fs.Float64("stop-return", 0, "stop the behaviour run once an evaluation reaches this return (0: never)")
	mediumReturn := fs.Float64("medium-return", 0, "target return of a behaviour run's medium snapshot (default: a third of the best snapshot's)")
	deterministic := fs.Bool("deterministic", false, "act with the policy's mean action instead of samples (not D4RL's rule)")
	evalEps := fs.Int("eval-episodes", 10, "deterministic episodes to measure the policy's return")
	bound(fs, nonNeg, "size", "workers", "train-warmup", "stop-return", "medium-return")
	bound(fs, atLeast1, "train-steps", "train-eval-every", "eval-episodes")
	bound(fs, anyNum, "seed")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.Changed("env") && *envFile != "" {
		return fmt.Errorf("%w: --env and --env-file cannot both be given", errUsage)
	}
	if fs.Changed("env-timeout") && (*envFile != "" || !remote.IsAddress(*env)) {
		return fmt.Errorf("%w: --env-timeout is for a remote environment, and --env %s is not an address", errUsage, *env)
	}
	if !slices.Contains(train.DatasetKinds, *kind) {
		return fmt.Errorf("%w: --kind %q is not one of %s", errUsage, *kind, strings.Join(train.DatasetKinds, ", "))
	}
	if *size < 0 || (*size == 0 && *kind != "medium-replay") {
		return fmt.Errorf("%w: --size %d must be positive", errUsage, *size)
	}
	if *workers < 0 || *evalEps <= 0 {
		return fmt.Errorf("%w: --workers %d must be >= 0 and --eval-episodes %d positive", errUsage, *workers, *evalEps)
	}
	if *format != "d4rl" && *format != "minari" {
		return fmt.Errorf("%w: --format %q: want d4rl or minari", errUsage, *format)
	}
	trainFlags := fs.Changed("train-dir") || fs.Changed("train-steps") || fs.Changed("train-warmup") ||
		fs.Changed("train-eval-every") || fs.Changed("stop-return")
	tg, err := collectEnv(*env, *envFile, *envTimeout)
	if err != nil {
		return err
	}
	if !tg.builtin && *kind != "random" && *policy == "" {
		if trainFlags {
			return fmt.Errorf("%w: --train-* trains behaviour runs on the built-in tasks only: for %s train an online run "+
				"(admpo train online %s --algo sac) and collect with --policy RUN", errUsage, tg.name, tg.flag)
		}
		return fmt.Errorf("%w: --kind %s: behaviour policies are shipped for the built-in tasks only: for %s give --policy RUN, "+
			"an online run in that environment (admpo train online %s --algo sac)", errUsage, *kind, tg.name, tg.flag)
	}
	if *workers == 0 && tg.remote {
		*workers = 1
	}
	path := *out
	if path == "" {
		path = filepath.Join("data", fmt.Sprintf("%s-%s.hdf5", tg.label, *kind))
		if *format == "minari" {
			path = filepath.Join("data", fmt.Sprintf("%s-%s-v0", tg.label, *kind))
		}
	}
	if *format == "minari" && datasets.IsMinari(path) {
		return fmt.Errorf("%w: --out %s already holds a Minari data set", errUsage, path)
	}
	meta := map[string]string{"env": tg.name, "kind": *kind, "seed": strconv.FormatInt(*seed, 10),
		"command": "admpo " + strings.Join(append([]string{"collect"}, args...), " "),
		"name":    tg.label + "-" + *kind}
	maps.Copy(meta, tg.meta)
	var d *datasets.Dataset
	if *kind == "random" {
		for i := range tg.low {
			if math.IsInf(tg.low[i], 0) || math.IsInf(tg.high[i], 0) {
				return fmt.Errorf("%w: --kind random draws uniform actions, but action value %d of %s is unbounded ([%v, %v])",
					errUsage, i, tg.name, tg.low[i], tg.high[i])
			}
		}
		u := envs.UniformActor{Low: tg.low, High: tg.high}
		var st collect.Stats
		if d, st, err = collect.Dataset(tg.open, *size, *seed, collectOptions(*workers, *size), collect.SharedActor(u)); err != nil {
			return err
		}
		meta["policy"] = "uniform random actions"
		meta["policy_return"] = ff(st.MeanReturn)
		setDataReturn(meta, "", tg, st.MeanReturn, st.Episodes)
	} else {
		var src policySource
		if *policy != "" || trainFlags {
			bc := collect.DefaultBehaviourConfig(tg.name, *seed, *trainSteps)
			bc.WarmUp, bc.EvalEvery, bc.StopReturn = *trainWarm, *trainEvery, *stopReturn
			if src, err = behaviour(*policy, *trainDir, path, bc); err != nil {
				return err
			}
		} else {
			dir, err := shippedDir(*policies, fs.Changed("policies"))
			if err != nil {
				return err
			}
			m, err := collect.ReadManifest(dir)
			if err != nil {
				return err
			}
			src = shippedSource{dir: dir, env: tg.name, m: m}
		}
		collectKind := func(k string, n int, seedOff int64) (*datasets.Dataset, error) {
			b, desc, err := src.policyFor(k, *mediumReturn)
			if err != nil {
				return nil, err
			}
			det, err := collect.OpenONNXPolicy(b, infer.Options{}, true)
			if err != nil {
				return nil, err
			}
			defer det.Close()
			if det.P.ObsDim != tg.obsDim || det.P.ActDim != tg.actDim {
				return nil, fmt.Errorf("the %s policy (%s) acts on %d observation values with %d actions, %s has %d and %d",
					k, desc, det.P.ObsDim, det.P.ActDim, tg.name, tg.obsDim, tg.actDim)
			}
			ret, retStd, err := collect.EvalPolicy(tg.open, det, *evalEps, *seed*1000+500+seedOff)
			if err != nil {
				return nil, err
			}
			fmt.Printf("%s policy: %s\n  deterministic return over %d episodes: %.1f ± %.1f\n", k, desc, *evalEps, ret, retStd)
			t0 := time.Now()
			pd, st, err := collect.Dataset(tg.open, n, *seed*1000+seedOff, collectOptions(*workers, n), collect.ONNXActors(b, *deterministic))
			if err != nil {
				return nil, err
			}
			fmt.Printf("  collected %d transitions in %s: %d complete episodes, mean episode return %.1f, mean length %.0f\n",
				st.Transitions, time.Since(t0).Round(time.Millisecond), st.Episodes, st.MeanReturn, st.MeanLength)
			pre := ""
			if *kind == "medium-expert" {
				pre = k + "_"
			}
			meta[pre+"policy"] = desc
			meta[pre+"policy_sha256"] = collect.Checksum(b)
			meta[pre+"policy_return"] = ff(ret)
			meta[pre+"policy_return_std"] = ff(retStd)
			setDataReturn(meta, pre, tg, st.MeanReturn, st.Episodes)
			return pd, nil
		}
		switch *kind {
		case "medium", "expert":
			if d, err = collectKind(*kind, *size, 0); err != nil {
				return err
			}
		case "medium-expert":
			md, err := collectKind("medium", *size, 0)
			if err != nil {
				return err
			}
			ed, err := collectKind("expert", *size, 1)
			if err != nil {
				return err
			}
			if d, err = collect.Concat(md, ed); err != nil {
				return err
			}
		case "medium-replay":
			var desc string
			if d, desc, err = src.mediumReplay(*size, *mediumReturn); err != nil {
				return err
			}
			meta["policy"] = desc
			n, ret := d.EpisodeReturns()
			setDataReturn(meta, "", tg, ret, n)
			fmt.Printf("medium-replay: %s -> %d transitions\n", desc, d.N)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	d.Meta = meta
	if err := writeDataset(path, *format, d, tg.low, tg.high); err != nil {
		return err
	}
	eps := d.Episodes()
	fmt.Printf("wrote %s: %d transitions, %d episodes (%s)\n", path, d.N, len(eps), meta["name"])
	return nil
}

// setDataReturn records a collected data set's mean episode return, its
// D4RL normalised score where the task has one (a built-in task), and its
// episode count.
func setDataReturn(meta map[string]string, prefix string, tg collectTarget, ret float64, episodes int) {
	meta[prefix+"data_return"] = ff(ret)
	if s, err := datasets.NormalizedScore(tg.name, ret); err == nil && tg.builtin {
		meta[prefix+"data_score"] = ff(s)
	}
	meta[prefix+"data_episodes"] = strconv.Itoa(episodes)
}

// mediumReplay is the behaviour run's replay buffer up to the medium
// snapshot (a plain online run: all of it), capped at size keeping the
// newest transitions from an episode start.
func (b behaviourSource) mediumReplay(size int, mediumReturn float64) (*datasets.Dataset, string, error) {
	run := b.run
	if run == nil {
		var err error
		if run, err = train.OpenRunDir(b.dir); err != nil {
			return nil, "", err
		}
	}
	replay, err := run.Real()
	if err != nil {
		return nil, "", err
	}
	_, desc, step, err := b.snapshot("medium", mediumReturn)
	if err != nil {
		return nil, "", err
	}
	d, err := replay.Dataset(step)
	if err != nil {
		return nil, "", err
	}
	if size > 0 && size < d.N {
		d = tailFromEpisodeStart(d, size)
	}
	return d, "replay buffer of the behaviour run up to " + desc, nil
}

// tailFromEpisodeStart keeps at most n of the newest rows, starting at an
// episode start.
func tailFromEpisodeStart(d *datasets.Dataset, n int) *datasets.Dataset {
	from := d.N - n
	for _, e := range d.Episodes() {
		if e.Start >= from {
			from = e.Start
			break
		}
	}
	od, ad := d.ObsDim, d.ActDim
	return &datasets.Dataset{ObsDim: od, ActDim: ad, N: d.N - from, Meta: d.Meta,
		Obs: d.Obs[from*od:], Act: d.Act[from*ad:], Rew: d.Rew[from:], NextObs: d.NextObs[from*od:],
		Terminal: d.Terminal[from:], Timeout: d.Timeout[from:]}
}

// behaviour opens --policy, or trains (or reuses) the behaviour SAC run.
func behaviour(policy, trainDir, out string, bc collect.BehaviourConfig) (behaviourSource, error) {
	if policy != "" {
		if l, err := collect.ReadBehaviourLog(policy); err == nil {
			return behaviourSource{dir: policy, log: l}, nil
		}
		run, err := train.OpenRunDir(policy)
		if err != nil {
			return behaviourSource{}, err
		}
		if run.Online == nil {
			return behaviourSource{}, fmt.Errorf("--policy %s is an offline run: the behaviour policy comes from an online run", policy)
		}
		return behaviourSource{dir: policy, run: run}, nil
	}
	dir := trainDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(out), fmt.Sprintf("behaviour-%s-%d", bc.Env, bc.Seed))
	}
	if l, err := collect.ReadBehaviourLog(dir); err == nil && l.Finished(bc) {
		fmt.Printf("reusing the behaviour run in %s (%s)\n", dir, l.Reason)
		return behaviourSource{dir: dir, log: l}, nil
	}
	fmt.Printf("training the behaviour SAC run in %s (%d env steps at most; Ctrl-C checkpoints, rerun to resume)\n", dir, bc.Steps)
	ctx, stop := interruptible()
	defer stop()
	l, err := collect.TrainBehaviour(ctx, bc, dir, statusPrinter(bc.Steps, 0))
	if errors.Is(err, train.ErrInterrupted) {
		return behaviourSource{}, fmt.Errorf("behaviour run interrupted (checkpoint written in %s; rerun to resume): %w", dir, err)
	}
	if err != nil {
		return behaviourSource{}, err
	}
	fmt.Printf("behaviour run done: %s\n", l.Reason)
	return behaviourSource{dir: dir, log: l}, nil
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func runPromote(args []string) error {
	fs := newFlags("promote")
	run := fs.String("run", "", "behaviour run directory (snapshots.json, snapshots/, checkpoint.ckpt)")
	kind := fs.String("kind", "", "medium or expert")
	step := fs.Int("step", 0, "env step of the snapshot (0: expert = the best snapshot, medium = closest to --medium-return)")
	mediumReturn := fs.Float64("medium-return", 0, "target return of the medium snapshot when --step is 0 (default: a third of the best)")
	to := fs.String("to", collect.ShippedDir, "directory of the shipped policies")
	evalEps := fs.Int("eval-episodes", 10, "deterministic episodes to measure the return")
	seed := fs.Int64("seed", 0, "seed of the evaluation episodes")
	command := fs.String("command", "scripts/behaviour_policies.sh", "what trained the run, recorded in the manifest")
	bound(fs, nonNeg, "step", "medium-return")
	bound(fs, atLeast1, "eval-episodes")
	bound(fs, anyNum, "seed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *run == "" || (*kind != "medium" && *kind != "expert") {
		return fmt.Errorf("%w: promote needs --run DIR and --kind medium or expert", errUsage)
	}
	if *step < 0 || *evalEps <= 0 {
		return fmt.Errorf("%w: --step %d must be >= 0 and --eval-episodes %d positive", errUsage, *step, *evalEps)
	}
	p, err := collect.Promote(*run, *to, collect.PromoteOptions{Kind: *kind, Step: *step, MediumReturn: *mediumReturn,
		EvalEpisodes: *evalEps, Seed: *seed, Command: *command})
	if err != nil {
		return err
	}
	fmt.Printf("shipped %s/%s: env step %d, deterministic return %.1f ± %.1f (normalised %.1f), sha256 %s\n",
		*to, p.File, p.Step, p.EvalReturn, p.EvalReturnStd, p.Score, p.SHA256)
	if r := p.Replay; r != nil {
		fmt.Printf("shipped %s/%s: %d transitions, %d episodes, mean return %.1f (normalised %.1f)\n",
			*to, r.File, r.Transitions, r.Episodes, r.MeanReturn, r.Score)
	}
	return nil
}

// writeDataset writes d as a D4RL file or (format minari) a Minari data set
// directory whose action space is [low, high] (the data's range when they
// are nil).
func writeDataset(path, format string, d *datasets.Dataset, low, high []float64) error {
	if format != "minari" {
		return datasets.WriteD4RL(path, d)
	}
	spec := datasets.MinariSpec{DatasetID: minariID(d, path), ActLow: low, ActHigh: high}
	return datasets.WriteMinari(path, d, spec)
}

// collectTarget is the environment admpo collect plays: a built-in task, a
// task file's task or a remote environment.
type collectTarget struct {
	name            string // the task's name, or the remote environment's address
	label           string // its part of the default output name (remote-HOST-PORT for an address)
	flag            string // how to name it on a command line (--env NAME, --env-file FILE)
	builtin, remote bool
	open            collect.OpenEnv
	obsDim, actDim  int
	low, high       []float64
	meta            map[string]string // what the data's metadata record of it beside env
}

// collectEnv resolves --env or --env-file and opens the environment once
// (a server that is down is an error naming it, before anything is
// written) for its sizes and action bounds.
func collectEnv(name, file string, timeout time.Duration) (collectTarget, error) {
	var tg collectTarget
	switch {
	case file != "":
		t, err := envs.LoadTaskFile(file)
		if err != nil {
			return tg, usageErr(err)
		}
		tg = collectTarget{name: t.Name, label: t.Name, flag: "--env-file " + file,
			open: func() (*envs.Env, error) { return envs.MakeTask(t) },
			meta: map[string]string{"env_file": t.File, "env_file_sha256": t.Digest}}
	case remote.IsAddress(name):
		if _, _, err := remote.ParseAddress(name); err != nil {
			return tg, usageErr(err)
		}
		tg = collectTarget{name: name, label: envRunName(name), flag: "--env " + name, remote: true,
			open: func() (*envs.Env, error) { return remote.Make(name, timeout) }}
	default:
		t, err := lookupTask(name)
		if err != nil {
			return tg, err
		}
		tg = collectTarget{name: t.Name, label: t.Name, flag: "--env " + t.Name, builtin: true, open: collect.Builtin(t.Name)}
	}
	e, err := tg.open()
	if err != nil {
		return tg, err
	}
	defer e.Close()
	tg.obsDim, tg.actDim, tg.low, tg.high = e.Task.ObsDim, e.Task.ActDim, e.ActionLow(), e.ActionHigh()
	return tg, nil
}

// minariID is a Minari dataset id for d: admpo/ENV/KIND-v0 when its
// metadata name a task and kind, else the directory's name.
func minariID(d *datasets.Dataset, path string) string {
	if env, kind := d.Meta["env"], d.Meta["kind"]; env != "" && kind != "" {
		return fmt.Sprintf("admpo/%s/%s-v0", env, kind)
	}
	return filepath.Base(filepath.Clean(path))
}

// collectOptions are a collection's options for n rows: its workers, and a
// progress line on stdout every 10 s (and at the end, when one was
// printed): a remote robot may take hours.
func collectOptions(workers, n int) collect.Options {
	start, last := clock(), clock()
	printed := false
	return collect.Options{Workers: workers, Progress: func(rows int) {
		now := clock()
		if now.Sub(last) < 10*time.Second && (rows < n || !printed) {
			return
		}
		last, printed = now, true
		rate := float64(rows) / math.Max(now.Sub(start).Seconds(), 1e-9)
		eta := "-"
		if rate > 0 {
			eta = (time.Duration(float64(n-rows)/rate) * time.Second).Round(time.Second).String()
		}
		fmt.Printf("  %d/%d transitions (%.0f/s, ETA %s)\n", rows, n, rate, eta)
	}}
}
