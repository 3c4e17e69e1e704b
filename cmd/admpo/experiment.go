package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/experiments"
	"github.com/admpo/admpo/train"
)

func runExperiment(args []string) error {
	return runGroup(args, "Usage: admpo experiment compounding-error|uncertainty|m-sweep [flags]\n"+
		"  compounding-error  open-loop state error of the ADM, the ensemble and the bootstrapping RNN vs roll-out length\n"+
		"  uncertainty        model uncertainty vs true one-step error (MuJoCo as ground truth) for three policies\n"+
		"  m-sweep            ADMPO-OFF normalised score vs the maximum backtracking length m\n"+
		"See admpo experiment SUB --help.\n",
		"experiment needs a sub-command: compounding-error, uncertainty or m-sweep",
		"experiment: unknown sub-command %q (compounding-error, uncertainty or m-sweep)",
		map[string]func([]string) error{"compounding-error": expCompounding, "uncertainty": expUncertainty, "m-sweep": expMSweep})
}

// budgetFlags registers the model-size and fit-cap flags shared by the
// studies that fit models.
type budgetFlags struct {
	m, hidden, layers, blocks, admEpochs, admSteps, admPatience *int
	members, elites, ensEpochs, ensSteps, ensPatience           *int
	admLR                                                       *float64
	ensHidden                                                   *string
}

func addBudgetFlags(fs *pflag.FlagSet) *budgetFlags {
	d := experiments.DefaultFitBudget(5)
	b := &budgetFlags{
		m:           fs.Int("m", d.M, "ADM maximum backtracking length (and the bootstrapping RNN's sequence length)"),
		hidden:      fs.Int("adm-hidden", d.Hidden, "ADM / RNN GRU width"),
		layers:      fs.Int("adm-layers", d.Layers, "ADM / RNN GRU layers"),
		blocks:      fs.Int("adm-res-blocks", d.Blocks, "ADM / RNN head ResBlocks"),
		admLR:       fs.Float64("adm-lr", d.ADMLR, "ADM / RNN learning rate"),
		admEpochs:   fs.Int("adm-epochs", d.ADMEpochs, "cap on ADM / RNN fit epochs (0: until early stopping)"),
		admSteps:    fs.Int("adm-steps", d.ADMSteps, "ADM / RNN train steps (batches of 256) per epoch (0: a full pass)"),
		admPatience: fs.Int("adm-patience", d.ADMPatience, "ADM / RNN epochs without holdout improvement before stopping"),
		members:     fs.Int("ensemble", d.Members, "ensemble members"),
		elites:      fs.Int("elites", d.Elites, "ensemble elites"),
		ensHidden:   fs.String("ensemble-hidden", "200,200,200,200", "ensemble member hidden sizes"),
		ensEpochs:   fs.Int("ensemble-epochs", d.EnsEpochs, "cap on ensemble fit epochs (0: until early stopping)"),
		ensSteps:    fs.Int("ensemble-steps", d.EnsSteps, "ensemble train steps per epoch (0: a full pass)"),
		ensPatience: fs.Int("ensemble-patience", d.EnsPatience, "ensemble epochs without improvement before stopping"),
	}
	bound(fs, atLeast1, "m", "adm-hidden", "adm-layers", "adm-patience", "ensemble", "elites", "ensemble-patience")
	bound(fs, nonNeg, "adm-res-blocks", "adm-epochs", "adm-steps", "ensemble-epochs", "ensemble-steps")
	bound(fs, positive, "adm-lr")
	return b
}

func (b *budgetFlags) budget(seed int64) (experiments.FitBudget, error) {
	h, err := parseInts(*b.ensHidden)
	if err != nil {
		return experiments.FitBudget{}, fmt.Errorf("%w: --ensemble-hidden: %v", errUsage, err)
	}
	fb := experiments.FitBudget{M: *b.m, Hidden: *b.hidden, Layers: *b.layers, Blocks: *b.blocks, ADMLR: *b.admLR,
		ADMEpochs: *b.admEpochs, ADMSteps: *b.admSteps, ADMPatience: *b.admPatience, Members: *b.members, Elites: *b.elites,
		EnsHidden: h, EnsEpochs: *b.ensEpochs, EnsSteps: *b.ensSteps, EnsPatience: *b.ensPatience, Seed: seed}
	if fb.M < 1 || fb.Hidden < 1 || fb.Layers < 1 || fb.Blocks < 0 || fb.ADMPatience < 1 || fb.Members < 1 ||
		fb.Elites < 1 || fb.Elites > fb.Members || fb.EnsPatience < 1 || fb.ADMLR <= 0 {
		return fb, fmt.Errorf("%w: invalid model sizes or fit caps %+v", errUsage, fb)
	}
	return fb, nil
}

// expData reads the data set and checks it against the task (from --env or
// the file's metadata); it returns the data, the task and a label such as
// "hopper-medium".
func expData(path, env string) (*datasets.Dataset, *envs.Task, string, error) {
	if path == "" {
		return nil, nil, "", fmt.Errorf("%w: --dataset FILE is required", errUsage)
	}
	d, err := datasets.Read(path)
	if err != nil {
		return nil, nil, "", err
	}
	if env == "" && d.Meta["env_file"] != "" {
		return nil, nil, "", fmt.Errorf("%w: %s was collected in the task file %s: the experiments replay built-in tasks only "+
			"(--env TASK picks one on purpose)", errUsage, path, d.Meta["env_file"])
	}
	if env == "" {
		env = d.Meta["env"]
	}
	if env == "" {
		return nil, nil, "", fmt.Errorf("%w: %s names no task in its metadata: set --env", errUsage, path)
	}
	task, err := lookupTask(env)
	if err != nil {
		return nil, nil, "", err
	}
	if err := d.Validate(task.ObsDim, task.ActDim); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", path, err)
	}
	name := d.Meta["name"]
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return d, task, name, nil
}

// copyFile copies a written plot to an extra path (e.g. under docs/).
func copyFile(src, dst string) error {
	if dst == "" {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// studyFlags are the flags every model study has: its data set and task,
// its output directory, where to copy its plot and (fitting studies) the
// directory of fitted models and the fit budget.
type studyFlags struct {
	study                          string
	dataset, env, out, png, models *string
	budget                         *budgetFlags // nil unless the study fits models
	seed                           *int64       // the seed of the fits
}

// addStudyFlags adds the study's shared flags; withModels adds --models.
func addStudyFlags(fs *pflag.FlagSet, study string, withModels bool) *studyFlags {
	s := &studyFlags{study: study,
		dataset: fs.String("dataset", "", "D4RL HDF5 data set"),
		env:     fs.String("env", "", "task (default: the data set's metadata)"),
		out:     fs.String("out", "", "output directory (default runs/experiments/"+study+"-NAME)"),
		png:     fs.String("png", "", "also copy the plot to this path (e.g. docs/exp-....png)"),
	}
	if withModels {
		s.models = fs.String("models", "", "directory of fitted models to reuse or fill (default OUT/models)")
	}
	return s
}

// withBudget adds the model-size and fit-cap flags of a study that fits
// its models with seed.
func (s *studyFlags) withBudget(fs *pflag.FlagSet, seed *int64) {
	s.budget, s.seed = addBudgetFlags(fs), seed
}

// study is what a model study's flags resolve to.
type study struct {
	data   *datasets.Dataset
	task   *envs.Task
	name   string                // the data set's label, e.g. "hopper-medium"
	dir    string                // the output directory
	models string                // the models directory (empty without --models)
	budget experiments.FitBudget // the fit budget (zero unless the study fits models)
}

// open parses the study's arguments with fs (whose flags include s's), reads
// the data set and resolves the task, the data set's name, the output and
// models directories and the fit budget.
func (s *studyFlags) open(fs *pflag.FlagSet, args []string) (study, error) {
	if err := parse(fs, args); err != nil {
		return study{}, err
	}
	var st study
	var err error
	if st.data, st.task, st.name, err = expData(*s.dataset, *s.env); err != nil {
		return study{}, err
	}
	if st.dir = *s.out; st.dir == "" {
		st.dir = filepath.Join("runs", "experiments", s.study+"-"+st.name)
	}
	if s.models != nil {
		if st.models = *s.models; st.models == "" {
			st.models = filepath.Join(st.dir, "models")
		}
	}
	if s.budget != nil {
		if st.budget, err = s.budget.budget(*s.seed); err != nil {
			return study{}, err
		}
	}
	return st, nil
}

// report prints a study's summary and its files, and copies the plot to --png.
func (s *studyFlags) report(res interface{ Summary(io.Writer) error }, csv, png string) error {
	if err := res.Summary(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", csv, png)
	return copyFile(png, *s.png)
}

func expCompounding(args []string) error {
	fs := newFlags("experiment compounding-error")
	sf := addStudyFlags(fs, "compounding-error", true)
	horizon := fs.Int("horizon", 100, "longest open-loop roll-out H")
	segments := fs.Int("segments", 200, "held-out segments evaluated at most")
	stride := fs.Int("stride", 25, "transitions between segment starts within an episode")
	testFrac := fs.Float64("test-frac", 0.1, "share of the transitions held out (whole episodes of > horizon steps)")
	fixedK1 := fs.Bool("fixed-k1", true, "also roll the ADM out with k = 1 at every step")
	seed := fs.Int64("seed", 0, "seed of the split, the fits and the roll-outs")
	sf.withBudget(fs, seed)
	bound(fs, atLeast1, "horizon", "segments", "stride")
	bound(fs, span{Lo: 0, Hi: 1, Open: true}, "test-frac")
	bound(fs, anyNum, "seed")
	st, err := sf.open(fs, args)
	if err != nil {
		return err
	}
	res, err := experiments.RunCompounding(experiments.CompoundingConfig{Data: st.data, Name: st.name, Out: st.dir,
		ModelsDir: st.models, Budget: st.budget, Horizon: *horizon, TestFrac: *testFrac, Stride: *stride,
		MaxSegments: *segments, FixedK1: *fixedK1, Seed: *seed}, os.Stdout)
	if err != nil {
		return err
	}
	fmt.Printf("\nmean state MSE of open-loop roll-outs on %s (%d segments from %d held-out episodes; models fitted on %d transitions)\n",
		st.name, res.Segments, res.TestEpisodes, res.TrainRows)
	return sf.report(res, res.CSV, res.PNG)
}

func expUncertainty(args []string) error {
	fs := newFlags("experiment uncertainty")
	sf := addStudyFlags(fs, "uncertainty", true)
	policy := fs.String("policy", "", "trained policy: ONNX actor, run directory (policy.onnx) or bundle; empty leaves it out")
	starts := fs.Int("starts", 500, "roll-out start sequences per policy and model")
	horizon := fs.Int("horizon", 10, "model steps per roll-out")
	bcSteps := fs.Int("bc-steps", 5000, "behaviour cloning updates")
	bcLR := fs.Float64("bc-lr", 1e-4, "behaviour cloning learning rate")
	testFrac := fs.Float64("test-frac", 0.1, "held-out share for the model fit (as compounding-error)")
	splitH := fs.Int("split-horizon", 100, "held-out episodes are longer than this (compounding-error's --horizon)")
	seed := fs.Int64("seed", 0, "seed of the split, the fits, BC, the starts and the roll-outs")
	sf.withBudget(fs, seed)
	bound(fs, atLeast1, "starts", "horizon", "bc-steps", "split-horizon")
	bound(fs, positive, "bc-lr")
	bound(fs, span{Lo: 0, Hi: 1, Open: true}, "test-frac")
	bound(fs, anyNum, "seed")
	st, err := sf.open(fs, args)
	if err != nil {
		return err
	}
	if *policy == "" {
		fmt.Println("no --policy: the trained policy is left out")
	}
	res, err := experiments.RunUncertainty(experiments.UncertaintyConfig{Data: st.data, Name: st.name, Task: st.task.Name,
		Out: st.dir, ModelsDir: st.models, Budget: st.budget, TestFrac: *testFrac, SplitHorizon: *splitH, PolicyPath: *policy,
		Starts: *starts, Horizon: *horizon, BCSteps: *bcSteps, BCBatch: 256, BCLR: *bcLR, Seed: *seed}, os.Stdout)
	if err != nil {
		return err
	}
	if res.Policy != "" {
		fmt.Printf("trained policy: %s\n", res.Policy)
	}
	fmt.Printf("\nuncertainty vs true one-step error on %s (%d starts x H=%d per policy and model)\n", st.name, *starts, *horizon)
	return sf.report(res, res.CSV, res.PNG)
}

func expMSweep(args []string) error {
	fs := newFlags("experiment m-sweep")
	sf := addStudyFlags(fs, "m-sweep", false)
	dataset := sf.dataset
	kind := fs.String("kind", "", "data set kind for the preset (default: metadata or file name)")
	msFlag := fs.String("m", "1,2,3,5,8", "maximum backtracking lengths")
	seedsFlag := fs.String("seeds", "0", "seeds, e.g. 0,1,2")
	preset := fs.String("preset", "quick", "offline preset: paper, cpu or quick")
	last := fs.Int("last", 3, "evaluations (epochs) averaged for a run's score")
	ov := addOverrides(fs, mSweepFields(&train.OfflineConfig{}))
	bound(fs, atLeast1, "last")
	st, err := sf.open(fs, args)
	if err != nil {
		return err
	}
	ms, err := parseInts(*msFlag)
	if err != nil {
		return fmt.Errorf("%w: --m: %v", errUsage, err)
	}
	var seeds []int64
	for _, f := range strings.Split(*seedsFlag, ",") {
		var s int64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &s); err != nil {
			return fmt.Errorf("%w: --seeds %q: %v", errUsage, *seedsFlag, err)
		}
		seeds = append(seeds, s)
	}
	k := *kind
	if k == "" {
		_, k, _ = train.DatasetIdentity(*dataset, st.data.Meta)
	}
	if k == "" {
		return fmt.Errorf("%w: cannot tell the data set kind of %s: set --kind", errUsage, *dataset)
	}
	cfg, err := train.OfflinePreset(*preset, st.task.Name, k, "admpo", st.task.ActDim)
	if err != nil {
		return usageErr(err)
	}
	cfg.Dataset = *dataset
	if err := ov.apply(mSweepFields(&cfg)); err != nil {
		return err
	}
	big := cfg // the largest m sizes the ADM's batches
	big.M = slices.Max(ms)
	if err := checkResources(fs, big.MemoryParts(st.task.ObsDim, st.task.ActDim, st.data.N), big.Threads, big.BLASThreads); err != nil {
		return err
	}
	fmt.Printf("m-sweep on %s: m in %v, seeds %v; every run: %d epochs x %d updates, H=%d, beta=%g, ADM %dx%d/%d, model fit <= %d epochs\n",
		st.name, ms, seeds, cfg.Epochs, cfg.StepsPerEpoch, cfg.Horizon, cfg.Penalty, cfg.ADMLayers, cfg.ADMHidden, cfg.ADMResBlocks, cfg.ModelMaxEpochs)
	ctx, stop := interruptible()
	defer stop()
	res, err := experiments.RunSweep(ctx, experiments.SweepConfig{Base: cfg, Ms: ms, Seeds: seeds, Out: st.dir, Last: *last,
		OnStatus: func(label string, s train.Status) {
			if s.Message != "" {
				fmt.Printf("[%s] %s\n", label, s.Message)
			}
		}}, os.Stdout)
	if errors.Is(err, train.ErrInterrupted) {
		fmt.Printf("interrupted: checkpoints written; rerun the same command to continue\n")
		return err
	}
	if err != nil {
		return err
	}
	fmt.Printf("\nADMPO-OFF normalised score vs m on %s (mean of the last %d evaluations)\n", st.name, *last)
	return sf.report(res, res.CSV, res.PNG)
}
