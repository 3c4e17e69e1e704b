package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/rundir"
)

// planName is the sweep plan's file name in the sweep directory.
const planName = "sweep.json"

// planVersion is sweep.json's format version.
const planVersion = 1

// gridKey is one --grid key (a train flag name) and its values.
type gridKey struct {
	Key    string
	Values []string
}

// sweepPlan is sweep.json: the grid's points, each with the full argument
// list (after `admpo`) of its fresh run.
type sweepPlan struct {
	Version int          `json:"version"`
	Command []string     `json:"command"` // the base command: train online|offline [flags]
	Out     string       `json:"out"`
	Keys    []string     `json:"keys"`
	Points  []sweepPoint `json:"points"`
}

// sweepPoint is one grid point: one run.
type sweepPoint struct {
	Index  int      `json:"index"`
	Name   string   `json:"name"`
	Dir    string   `json:"dir"`
	Values []string `json:"values"` // in the order of the plan's keys
	Args   []string `json:"args"`
}

// reservedKeys are train flags that the sweep sets itself or that start
// no training run: neither --cmd nor --grid may give them.
var reservedKeys = []string{"out", "resume", "dry-run", "help", "diagnose", "diagnose-starts", "diagnose-policy", "diagnose-buffer", "diagnose-episodes",
	"diagnose-no-dropout"}

// parseGrid parses --grid specs, each of space-separated KEY=V1,V2,...
// items (values separated by | instead when the list holds a |, for values
// with commas such as hidden=256,256|64,64).
func parseGrid(specs []string) ([]gridKey, error) {
	var keys []gridKey
	seen := map[string]bool{}
	for _, spec := range specs {
		for _, item := range strings.Fields(spec) {
			k, list, ok := strings.Cut(item, "=")
			k = strings.TrimPrefix(k, "--")
			if !ok || k == "" {
				return nil, fmt.Errorf("%w: sweep: --grid item %q: want KEY=VALUE[,VALUE...]", errUsage, item)
			}
			if seen[k] {
				return nil, fmt.Errorf("%w: sweep: --grid key %q given twice", errUsage, k)
			}
			seen[k] = true
			sep := ","
			if strings.Contains(list, "|") {
				sep = "|"
			}
			vals := strings.Split(list, sep)
			got := map[string]bool{}
			for _, v := range vals {
				if v == "" {
					return nil, fmt.Errorf("%w: sweep: --grid key %q has an empty value (%q)", errUsage, k, item)
				}
				if got[v] {
					return nil, fmt.Errorf("%w: sweep: --grid key %q lists the value %q twice", errUsage, k, v)
				}
				got[v] = true
			}
			keys = append(keys, gridKey{Key: k, Values: vals})
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: sweep: --grid names no key (e.g. --grid 'seed=0,1,2 algo=admpo,mbpo')", errUsage)
	}
	return keys, nil
}

// unsafeName matches the characters a run directory name replaces by '-'.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.+-]+`)

// nameValue is a grid value as it appears in a run directory name: a
// remote environment's address gives remote-HOST-PORT or remote-SOCKET (as
// a run's default directory name), a path its file name without extension;
// characters other than letters, digits, '.', '+' and '-' become '-'.
func nameValue(v string) string {
	if remote.IsAddress(v) {
		v = envRunName(v)
	} else if strings.Contains(v, "/") {
		v = strings.TrimSuffix(filepath.Base(v), filepath.Ext(v))
	}
	v = strings.Trim(unsafeName.ReplaceAllString(v, "-"), "-")
	if v == "" || v == "." || v == ".." {
		v = "x"
	}
	return v
}

// runName is the run directory name of a grid point: KEY=VALUE items
// joined by '_', in the grid's key order.
func runName(keys []gridKey, vals []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.Key + "=" + nameValue(vals[i])
	}
	return strings.Join(parts, "_")
}

// expandGrid returns the plan of the grid's cartesian product, the first
// key varying slowest (as nested loops in the order given); each point
// runs base plus --KEY=VALUE per key plus --out OUT/NAME.
func expandGrid(base []string, keys []gridKey, out string) (*sweepPlan, error) {
	p := &sweepPlan{Version: planVersion, Command: base, Out: out}
	n := 1
	for _, k := range keys {
		p.Keys = append(p.Keys, k.Key)
		n *= len(k.Values)
		if n > 100000 {
			return nil, fmt.Errorf("%w: sweep: the grid has over 100000 points", errUsage)
		}
	}
	names := map[string]int{}
	for i := 0; i < n; i++ {
		vals := make([]string, len(keys))
		rest := i
		for j := len(keys) - 1; j >= 0; j-- {
			vals[j] = keys[j].Values[rest%len(keys[j].Values)]
			rest /= len(keys[j].Values)
		}
		name := runName(keys, vals)
		if prev, ok := names[name]; ok {
			return nil, fmt.Errorf("%w: sweep: grid points %d and %d both name their run directory %q (values differing only in characters a directory name drops)",
				errUsage, prev, i, name)
		}
		names[name] = i
		dir := filepath.Join(out, name)
		args := append([]string(nil), base...)
		for j, k := range keys {
			args = append(args, "--"+k.Key+"="+vals[j])
		}
		args = append(args, "--out", dir)
		p.Points = append(p.Points, sweepPoint{Index: i, Name: name, Dir: dir, Values: vals, Args: args})
	}
	return p, nil
}

// trainFlagSet is the flag set of a train sub-command (online or offline).
func trainFlagSet(sub string) (*pflag.FlagSet, error) {
	switch sub {
	case "online":
		fs, _ := newOnlineFlags()
		return fs, nil
	case "offline":
		fs, _ := newOfflineFlags()
		return fs, nil
	}
	return nil, fmt.Errorf("%w: sweep: --cmd must start with `train online` or `train offline`, got `train %s`", errUsage, sub)
}

// checkPlan checks the base command and every grid point's arguments
// against the train sub-command's flags: an unknown or reserved key, a key
// that --cmd already gives, or a value its flag refuses is a usage error.
func checkPlan(p *sweepPlan) error {
	if len(p.Command) < 2 || p.Command[0] != "train" {
		return fmt.Errorf("%w: sweep: --cmd must start with `train online` or `train offline`, got %q", errUsage, strings.Join(p.Command, " "))
	}
	sub := p.Command[1]
	fs, err := trainFlagSet(sub)
	if err != nil {
		return err
	}
	for _, k := range p.Keys {
		if slices.Contains(reservedKeys, k) {
			return fmt.Errorf("%w: sweep: --grid key %q: the sweep sets --out and --resume itself; %q cannot vary", errUsage, k, k)
		}
		if fs.Lookup(k) == nil {
			return fmt.Errorf("%w: sweep: --grid key %q is no flag of `admpo train %s` (see admpo train %s --help)", errUsage, k, sub, sub)
		}
	}
	fs.SetOutput(io.Discard)
	if err := parse(fs, p.Command[2:]); err != nil {
		return fmt.Errorf("%w: sweep: --cmd: %v", errUsage, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	}
	for _, r := range reservedKeys {
		if fs.Changed(r) {
			return fmt.Errorf("%w: sweep: --cmd gives --%s: the sweep sets the run directories (--out) and resumes (--resume) itself", errUsage, r)
		}
	}
	for _, k := range p.Keys {
		if fs.Changed(k) {
			return fmt.Errorf("%w: sweep: --grid key %q is also given in --cmd: give it in one place", errUsage, k)
		}
	}
	for _, pt := range p.Points {
		fs, _ := trainFlagSet(sub)
		fs.SetOutput(io.Discard)
		if err := parse(fs, pt.Args[2:]); err != nil {
			return fmt.Errorf("%w: sweep: grid point %s: %v", errUsage, pt.Name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		}
	}
	return nil
}

// envCheck is how far checkPlanEnvs checks the environments of a plan's
// online points.
type envCheck int

const (
	envNames envCheck = iota // names, addresses' form and flag combinations only (the runs' files are elsewhere: --k8s)
	envFiles                 // also load every task file (--slurm, --dry-run: the jobs see this file system)
	envDial                  // also reach every remote environment's server once (running here)
)

// checkPlanEnvs checks the environment every `train online` point plays
// (from its flags and its --config file) as train online would, before
// anything is written: a built-in task must exist, a task file load (from
// envFiles on), a remote address be well formed and (with envDial) its
// server answer; --env with --env-file, or a termination rule the
// environment cannot have, is refused. Each distinct choice is checked
// once. Usage problems are usage errors naming the grid point; a server
// that does not answer is an error naming its address.
func checkPlanEnvs(p *sweepPlan, level envCheck) error {
	if p.Command[1] != "online" {
		return nil
	}
	seen := map[string]bool{}
	for _, pt := range p.Points {
		fs, f := newOnlineFlags()
		fs.SetOutput(io.Discard)
		if err := parse(fs, pt.Args[2:]); err != nil {
			return err // checkPlan has parsed them
		}
		ch, err := pickOnlineEnv(fs, f)
		if err != nil {
			return pointErr(pt, err)
		}
		key := strings.Join([]string{ch.env, ch.envFile, ch.termination, f.envTimeout.String()}, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		if level < envFiles && ch.envFile != "" && !remote.IsAddress(ch.env) {
			continue // a task file on the jobs' file system: each run checks it
		}
		term := ch.termination
		if _, _, err := onlineEnv(ch.env, ch.envFile, &term, *f.envTimeout, level >= envDial); err != nil {
			return pointErr(pt, err)
		}
	}
	return nil
}

// pointErr is err of grid point pt's run, named: still a usage error when
// it was one.
func pointErr(pt sweepPoint, err error) error {
	msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	if errors.Is(err, errUsage) {
		return fmt.Errorf("%w: sweep: grid point %s: %s", errUsage, pt.Name, msg)
	}
	return fmt.Errorf("sweep: grid point %s: %s", pt.Name, msg)
}

// runAction is what a grid point's run needs.
type runAction int

const (
	actFresh  runAction = iota // no checkpoint: (re)start it
	actResume                  // a checkpoint and no final policy: resume
	actDone                    // the final policy is written: skip
)

func (a runAction) String() string {
	return [...]string{"fresh", "resume", "done"}[a]
}

// decideRun says what the run directory dir needs, as
// scripts/online_results.sh decides: finished runs (policy.onnx) are
// skipped, runs with a checkpoint resumed, others started afresh.
func decideRun(dir string) runAction {
	if fileExists(rundir.Dir(dir).Policy()) {
		return actDone
	}
	if fileExists(rundir.Dir(dir).Checkpoint()) {
		return actResume
	}
	return actFresh
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// pointArgs is the argument list (after `admpo`) that runs point pt now,
// and what it does: nil for a finished run.
func pointArgs(p *sweepPlan, pt sweepPoint) ([]string, runAction) {
	a := decideRun(pt.Dir)
	switch a {
	case actResume:
		return []string{"train", p.Command[1], "--resume", pt.Dir}, a
	case actFresh:
		return pt.Args, a
	}
	return nil, a
}

// readPlan reads and checks a sweep.json.
func readPlan(path string) (*sweepPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("sweep: --plan: %w", err))
	}
	var p sweepPlan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, usageErr(fmt.Errorf("sweep: --plan %s: not a sweep plan: %v", path, err))
	}
	if p.Version != planVersion {
		return nil, usageErr(fmt.Errorf("sweep: --plan %s: version %d, this admpo reads version %d", path, p.Version, planVersion))
	}
	for i, pt := range p.Points {
		if pt.Index != i || pt.Dir == "" || len(pt.Args) < 2 {
			return nil, usageErr(fmt.Errorf("sweep: --plan %s: point %d is malformed", path, i))
		}
	}
	if len(p.Command) < 2 || p.Command[0] != "train" {
		return nil, usageErr(fmt.Errorf("sweep: --plan %s: its command is not a train command", path))
	}
	return &p, nil
}

// writePlan writes p as path (atomically). An existing plan there must
// agree with p on every run directory both name (so a grid may grow, but a
// run directory never changes its arguments).
func writePlan(path string, p *sweepPlan) error {
	if old, err := readPlan(path); err == nil {
		args := map[string][]string{}
		for _, pt := range old.Points {
			args[pt.Dir] = pt.Args
		}
		for _, pt := range p.Points {
			if a, ok := args[pt.Dir]; ok && !slices.Equal(a, pt.Args) {
				return fmt.Errorf("%w: sweep: %s already plans %s with other arguments (%s): use another --out, or remove the old sweep",
					errUsage, path, pt.Dir, strings.Join(a, " "))
			}
		}
	} else if fileExists(path) {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// runPoint runs grid point i of the plan in this process: skipped when
// finished, resumed from its checkpoint, or started afresh (removing what
// an earlier start left without a checkpoint).
func runPoint(p *sweepPlan, i int) error {
	if i < 0 || i >= len(p.Points) {
		return fmt.Errorf("%w: sweep: run index %d: the plan has points 0 to %d", errUsage, i, len(p.Points)-1)
	}
	pt := p.Points[i]
	args, a := pointArgs(p, pt)
	switch a {
	case actDone:
		fmt.Printf("sweep point %d (%s): finished already (%s/policy.onnx)\n", i, pt.Name, pt.Dir)
		return nil
	case actFresh:
		if err := os.RemoveAll(pt.Dir); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	fmt.Printf("sweep point %d (%s): admpo %s\n", i, pt.Name, strings.Join(args, " "))
	return runTrain(args[1:])
}

// sweepFlags are admpo sweep's flags.
type sweepFlags struct {
	grid, sbatch                                *[]string
	cmd, out, slurm, k8s, image, pvc, mountPath *string
	name, bin, plan                             *string
	jobs, parallelism, backoff, runIndex        *int
	dryRun                                      *bool
}

func newSweepFlags() (*pflag.FlagSet, *sweepFlags) {
	fs := newFlags("sweep")
	f := &sweepFlags{}
	f.grid = fs.StringArray("grid", nil, "grid: space-separated KEY=V1,V2,... items (V1|V2|... for values with commas); repeatable")
	f.cmd = fs.String("cmd", "train online", "base command of every run (split at spaces, no quoting): train online|offline and its flags")
	f.out = fs.String("out", "runs/sweep", "sweep directory: sweep.json and one run directory per point (with --k8s: under --mount-path)")
	f.jobs = fs.Int("jobs", 2, "runs at a time when running here")
	f.dryRun = fs.Bool("dry-run", false, "print each point's run directory and command, and write nothing")
	f.slurm = fs.String("slurm", "", "write a Slurm job-array script to this file instead of running")
	f.sbatch = fs.StringArray("sbatch", nil, "with --slurm: an extra #SBATCH option, e.g. --sbatch --time=08:00:00; repeatable")
	f.k8s = fs.String("k8s", "", "write a Kubernetes Indexed Job manifest (with the plan's ConfigMap) to this file instead of running")
	f.image = fs.String("image", "", "with --k8s: container image holding admpo (required)")
	f.pvc = fs.String("pvc", "", "with --k8s: PersistentVolumeClaim holding the run directories (required)")
	f.mountPath = fs.String("mount-path", "/runs", "with --k8s: where the claim is mounted; a relative --out lies under it")
	f.name = fs.String("name", "", "with --slurm or --k8s: job name (default: from --out's last element)")
	f.bin = fs.String("bin", "", "admpo binary the jobs run (default: this binary's absolute path with --slurm, admpo with --k8s)")
	f.parallelism = fs.Int("parallelism", 0, "with --slurm or --k8s: most runs at a time (0: all points)")
	f.backoff = fs.Int("backoff-limit", 6, "with --k8s: the Job's retries of failed pods in all (each resumes its run)")
	f.plan = fs.String("plan", "", "run one point of this sweep.json (with --run-index; nothing else may be given)")
	f.runIndex = fs.Int("run-index", -1, "with --plan: the point to run (default: $JOB_COMPLETION_INDEX, else $SLURM_ARRAY_TASK_ID)")
	bound(fs, atLeast1, "jobs")
	bound(fs, nonNeg, "parallelism", "backoff-limit", "run-index")
	return fs, f
}

func runSweep(args []string) error {
	fs, f := newSweepFlags()
	if err := parse(fs, args); err != nil {
		return err
	}
	if *f.plan != "" {
		var extra []string
		fs.Visit(func(fl *pflag.Flag) {
			if fl.Name != "plan" && fl.Name != "run-index" {
				extra = append(extra, "--"+fl.Name)
			}
		})
		if len(extra) > 0 {
			return fmt.Errorf("%w: sweep: --plan takes only --run-index, not %s", errUsage, strings.Join(extra, ", "))
		}
		p, err := readPlan(*f.plan)
		if err != nil {
			return err
		}
		i, err := runIndexFrom(fs.Changed("run-index"), *f.runIndex)
		if err != nil {
			return err
		}
		return runPoint(p, i)
	}
	if fs.Changed("run-index") {
		return fmt.Errorf("%w: sweep: --run-index needs --plan", errUsage)
	}
	if *f.slurm != "" && *f.k8s != "" {
		return fmt.Errorf("%w: sweep: give --slurm or --k8s, not both", errUsage)
	}
	for _, fl := range []struct {
		name, mode string
		ok         bool
	}{{"sbatch", "--slurm", *f.slurm != ""}, {"image", "--k8s", *f.k8s != ""}, {"pvc", "--k8s", *f.k8s != ""},
		{"mount-path", "--k8s", *f.k8s != ""}, {"backoff-limit", "--k8s", *f.k8s != ""},
		{"name", "--slurm or --k8s", *f.slurm != "" || *f.k8s != ""}, {"bin", "--slurm or --k8s", *f.slurm != "" || *f.k8s != ""},
		{"parallelism", "--slurm or --k8s", *f.slurm != "" || *f.k8s != ""}, {"jobs", "running here", *f.slurm == "" && *f.k8s == ""}} {
		if fs.Changed(fl.name) && !fl.ok {
			return fmt.Errorf("%w: sweep: --%s applies only with %s", errUsage, fl.name, fl.mode)
		}
	}
	keys, err := parseGrid(*f.grid)
	if err != nil {
		return err
	}
	out := filepath.Clean(*f.out)
	switch {
	case *f.k8s != "":
		if *f.image == "" || *f.pvc == "" {
			return fmt.Errorf("%w: sweep: --k8s needs --image and --pvc", errUsage)
		}
		mp := filepath.Clean(*f.mountPath)
		if !filepath.IsAbs(mp) {
			return fmt.Errorf("%w: sweep: --mount-path %q must be absolute", errUsage, *f.mountPath)
		}
		if !filepath.IsAbs(out) {
			out = filepath.Join(mp, out)
		}
		if rel, err := filepath.Rel(mp, out); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%w: sweep: --out %s must lie under --mount-path %s (the runs must outlive the pods)", errUsage, out, mp)
		}
	case *f.slurm != "":
		if out, err = filepath.Abs(out); err != nil {
			return err
		}
	}
	p, err := expandGrid(strings.Fields(*f.cmd), keys, out)
	if err != nil {
		return err
	}
	if err := checkPlan(p); err != nil {
		return err
	}
	level := envDial
	switch {
	case *f.k8s != "":
		level = envNames
	case *f.slurm != "" || *f.dryRun:
		level = envFiles
	}
	if err := checkPlanEnvs(p, level); err != nil {
		return err
	}
	if *f.dryRun {
		for _, pt := range p.Points {
			fmt.Printf("%d %s: admpo %s\n", pt.Index, pt.Dir, strings.Join(pt.Args, " "))
		}
		return nil
	}
	name := *f.name
	if name == "" {
		name = jobName(filepath.Base(out))
	} else if !dnsLabel.MatchString(name) || len(name) > 50 {
		return fmt.Errorf("%w: sweep: --name %q: want at most 50 lower-case letters, digits and '-', starting and ending with a letter or digit", errUsage, name)
	}
	switch {
	case *f.k8s != "":
		bin := *f.bin
		if bin == "" {
			bin = "admpo"
		}
		b, err := k8sManifest(p, k8sOptions{Name: name, Image: *f.image, PVC: *f.pvc, MountPath: filepath.Clean(*f.mountPath),
			Bin: bin, File: *f.k8s, Parallelism: *f.parallelism, BackoffLimit: *f.backoff})
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(*f.k8s, b, 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote %s: Indexed Job %s of %d runs under %s on claim %s (kubectl apply -f %s)\n", *f.k8s, name, len(p.Points), out, *f.pvc, *f.k8s)
		return nil
	case *f.slurm != "":
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		for _, d := range []string{out, wd} { // #SBATCH lines take no quoting
			if strings.ContainsAny(d, " \t\"'\\") {
				return fmt.Errorf("%w: sweep: --slurm: the path %q holds a space or quote, which #SBATCH lines cannot hold", errUsage, d)
			}
		}
		for _, s := range *f.sbatch {
			if strings.ContainsAny(s, "\n\r") {
				return fmt.Errorf("%w: sweep: --sbatch %q holds a line break", errUsage, s)
			}
		}
		planPath := filepath.Join(out, planName)
		if err := writePlan(planPath, p); err != nil {
			return err
		}
		bin := *f.bin
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return err
			}
		}
		if bin, err = filepath.Abs(bin); err != nil {
			return err
		}
		script := slurmScript(p, slurmOptions{Name: name, Plan: planPath, Script: *f.slurm, Dir: wd, Bin: bin, Parallelism: *f.parallelism, Extra: *f.sbatch})
		if err := atomicfile.WriteFile(*f.slurm, []byte(script), 0o755); err != nil {
			return err
		}
		fmt.Printf("wrote %s (plan %s): job array %s of %d runs (sbatch %s)\n", *f.slurm, planPath, name, len(p.Points), *f.slurm)
		return nil
	}
	planPath := filepath.Join(out, planName)
	if err := writePlan(planPath, p); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &localRunner{plan: p, jobs: *f.jobs, w: os.Stdout, launch: execLauncher(bin, planPath)}
	return r.run(ctx)
}

// runIndexFrom is the point to run: --run-index when given, else
// $JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs), else
// $SLURM_ARRAY_TASK_ID.
func runIndexFrom(given bool, flag int) (int, error) {
	if given {
		return flag, nil
	}
	for _, v := range []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"} {
		if s, ok := os.LookupEnv(v); ok {
			i, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || i < 0 {
				return 0, fmt.Errorf("%w: sweep: $%s=%q is no run index", errUsage, v, s)
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: sweep: --plan needs --run-index (or $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID)", errUsage)
}

// dnsLabel is a Kubernetes DNS-1123 label.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// jobName turns s into a DNS-1123 label of at most 50 characters.
func jobName(s string) string {
	s = strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if s == "" {
		s = "admpo-sweep"
	}
	return s
}

// launcher runs one grid point to its end, its output going to log.
type launcher func(ctx context.Context, index int, log io.Writer) error

// execLauncher runs points as `bin sweep --plan plan --run-index I`
// processes; a cancelled context sends them SIGTERM (they checkpoint and
// stop) and waits for them.
func execLauncher(bin, plan string) launcher {
	return func(ctx context.Context, index int, log io.Writer) error {
		cmd := exec.CommandContext(ctx, bin, "sweep", "--plan", plan, "--run-index", strconv.Itoa(index))
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = os.Environ()
		if _, ok := os.LookupEnv("OPENBLAS_NUM_THREADS"); !ok {
			cmd.Env = append(cmd.Env, "OPENBLAS_NUM_THREADS=1")
		}
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		return cmd.Run()
	}
}

// localRunner runs a plan's points here, jobs at a time.
type localRunner struct {
	plan   *sweepPlan
	jobs   int
	w      io.Writer
	launch launcher
}

// lockPath is the lock file of a point's run (as scripts/run_lock.sh's).
func lockPath(pt sweepPoint) string { return pt.Dir + ".lock" }

// lockRun takes the lock of the run at path (flock(2) on the file, as
// scripts/run_lock.sh takes it, so sweeps and the run scripts never run a
// directory twice): the held file, or nil when another process holds it. The
// lock goes with its holder's process; the file holds the holder's pid.
func lockRun(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sweep: lock: %w", err)
	}
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("sweep: lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("sweep: lock %s: %w", path, err)
		}
		// Its last holder may have removed the file between our open and our
		// lock: then the lock is on a file nobody else will look at; retry.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			if err := f.Truncate(0); err != nil {
				unlockRun(f)
				return nil, fmt.Errorf("sweep: lock %s: %w", path, err)
			}
			if _, err := fmt.Fprintln(f, os.Getpid()); err != nil {
				unlockRun(f)
				return nil, fmt.Errorf("sweep: lock %s: %w", path, err)
			}
			return f, nil
		}
		f.Close()
	}
}

// unlockRun releases a lock from lockRun, removing its file first (whoever
// locks the removed file next sees that and retries).
func unlockRun(f *os.File) {
	os.Remove(f.Name())
	f.Close()
}

// run runs every point that is not finished or held by another sweep,
// printing progress; an error when some run did not finish.
func (r *localRunner) run(ctx context.Context) error {
	n := len(r.plan.Points)
	var mu sync.Mutex
	done, finished, failed, skipped := 0, 0, 0, 0
	// say prints a progress line; a line that ends a point (c != nil) counts
	// it first, under the same lock, so that the counts print in order.
	say := func(c *int, format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if c != nil {
			*c++
			done++
		}
		fmt.Fprintf(r.w, "%s [%d/%d] %s\n", time.Now().Format("15:04:05"), done, n, fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(r.w, "sweep: %d runs in %s, %d at a time\n", n, r.plan.Out, r.jobs)
	todo := make(chan sweepPoint)
	var wg sync.WaitGroup
	for w := 0; w < r.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pt := range todo {
				if ctx.Err() != nil {
					continue
				}
				a := decideRun(pt.Dir)
				if a == actDone {
					say(&skipped, "skipped %s: finished already", pt.Name)
					continue
				}
				held, err := lockRun(lockPath(pt))
				if err != nil || held == nil {
					if err != nil {
						say(&skipped, "skipped %s: %v", pt.Name, err)
					} else {
						say(&skipped, "skipped %s: another sweep runs it (%s)", pt.Name, lockPath(pt))
					}
					continue
				}
				mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
				verb := "started"
				if a == actResume {
					mode, verb = os.O_WRONLY|os.O_CREATE|os.O_APPEND, "resumed"
				}
				logPath := pt.Dir + ".log"
				log, err := os.OpenFile(logPath, mode, 0o644)
				if err != nil {
					unlockRun(held)
					say(&failed, "failed %s: %v", pt.Name, err)
					continue
				}
				say(nil, "%s %s (log %s)", verb, pt.Name, logPath)
				start := time.Now()
				err = r.launch(ctx, pt.Index, log)
				log.Close()
				unlockRun(held)
				if decideRun(pt.Dir) == actDone {
					say(&finished, "finished %s in %s%s", pt.Name, time.Since(start).Round(time.Second), lastEval(logPath))
					continue
				}
				why := "stopped"
				switch {
				case ctx.Err() != nil:
					why = "interrupted"
				case err != nil:
					why = "stopped (" + err.Error() + ")"
				}
				say(&failed, "%s %s after %s: see %s; run the sweep again to resume", why, pt.Name, time.Since(start).Round(time.Second), logPath)
			}
		}()
	}
	for _, pt := range r.plan.Points {
		todo <- pt
	}
	close(todo)
	wg.Wait()
	rest := n - done
	fmt.Fprintf(r.w, "sweep: %d finished, %d skipped, %d stopped or failed, %d not started\n", finished, skipped, failed, rest)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("sweep interrupted: run the same command again to resume")
	case failed > 0:
		return fmt.Errorf("sweep: %d of %d runs did not finish (see their logs in %s)", failed, n, r.plan.Out)
	}
	return nil
}

// lastEval is ": LINE" for the last line of the log that reports an
// evaluation return, or "".
func lastEval(logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "eval return") || strings.Contains(lines[i], "normalised score") {
			return ": " + strings.TrimSpace(lines[i])
		}
	}
	return ""
}

// slurmOptions are the choices of a Slurm job-array script.
type slurmOptions struct {
	Name, Plan, Bin, Script string
	Dir                     string // the jobs' working directory (relative paths in --cmd)
	Parallelism             int
	Extra                   []string // extra #SBATCH options
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// slurmScript is a job-array script whose index I runs the plan's point I.
func slurmScript(p *sweepPlan, o slurmOptions) string {
	var b strings.Builder
	arr := fmt.Sprintf("0-%d", len(p.Points)-1)
	if o.Parallelism > 0 {
		arr += "%" + strconv.Itoa(o.Parallelism)
	}
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", o.Name)
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", arr)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(p.Out, "slurm-%A_%a.out"))
	if o.Dir != "" {
		fmt.Fprintf(&b, "#SBATCH --chdir=%s\n", o.Dir)
	}
	fmt.Fprintf(&b, "#SBATCH --open-mode=append\n")
	fmt.Fprintf(&b, "#SBATCH --requeue\n")
	for _, e := range o.Extra {
		fmt.Fprintf(&b, "#SBATCH %s\n", e)
	}
	fmt.Fprintf(&b, "# Generated by admpo sweep: %d runs of `admpo %s` over %s, run directories in %s.\n",
		len(p.Points), strings.Join(p.Command, " "), strings.Join(p.Keys, ", "), p.Out)
	fmt.Fprintf(&b, "# Index I runs point I of the plan (skipped when finished, resumed from its checkpoint when\n")
	fmt.Fprintf(&b, "# interrupted or requeued). Submit with: sbatch %s\n", o.Script)
	fmt.Fprintf(&b, "set -euo pipefail\n")
	fmt.Fprintf(&b, "export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}\n")
	fmt.Fprintf(&b, "exec %s sweep --plan %s --run-index \"$SLURM_ARRAY_TASK_ID\"\n", shellQuote(o.Bin), shellQuote(o.Plan))
	return b.String()
}

// k8sOptions are the choices of a Kubernetes Indexed Job manifest.
type k8sOptions struct {
	Name, Image, PVC, MountPath, Bin, File string
	Parallelism, BackoffLimit              int
}

// planMount is where the pods see the plan's ConfigMap.
const planMount = "/etc/admpo-sweep"

// k8sManifest is a ConfigMap holding the plan and an Indexed Job running
// one point per completion index, as two YAML documents.
func k8sManifest(p *sweepPlan, o k8sOptions) ([]byte, error) {
	plan, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	par := o.Parallelism
	if par == 0 || par > len(p.Points) {
		par = len(p.Points)
	}
	type m = map[string]any
	labels := m{"app.kubernetes.io/name": "admpo", "app.kubernetes.io/instance": o.Name}
	cm := m{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": m{"name": o.Name + "-plan", "labels": labels},
		"data":     m{planName: string(plan) + "\n"}}
	job := m{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": m{"name": o.Name, "labels": labels},
		"spec": m{
			"completionMode": "Indexed",
			"completions":    len(p.Points),
			"parallelism":    par,
			"backoffLimit":   o.BackoffLimit,
			"template": m{
				"metadata": m{"labels": labels},
				"spec": m{
					"restartPolicy": "OnFailure",
					// SIGTERM makes a run write a checkpoint before it exits.
					"terminationGracePeriodSeconds": 120,
					"containers": []m{{
						"name":    "admpo",
						"image":   o.Image,
						"command": []string{o.Bin},
						// The point comes from $JOB_COMPLETION_INDEX, set in every pod of an Indexed Job.
						"args": []string{"sweep", "--plan", planMount + "/" + planName},
						"env":  []m{{"name": "OPENBLAS_NUM_THREADS", "value": "1"}},
						"volumeMounts": []m{
							{"name": "runs", "mountPath": o.MountPath},
							{"name": "plan", "mountPath": planMount, "readOnly": true},
						},
					}},
					"volumes": []m{
						{"name": "runs", "persistentVolumeClaim": m{"claimName": o.PVC}},
						{"name": "plan", "configMap": m{"name": o.Name + "-plan"}},
					},
				},
			},
		},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated by admpo sweep: %d runs of `admpo %s` over %s, run directories in %s\n",
		len(p.Points), strings.Join(p.Command, " "), strings.Join(p.Keys, ", "), p.Out)
	fmt.Fprintf(&b, "# on claim %s. Apply with: kubectl apply -f %s\n", o.PVC, o.File)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, d := range []m{cm, job} {
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return b.Bytes(), nil
}
