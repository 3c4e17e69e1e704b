package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/onnx"
)

// ErrInterrupted is returned by Online.Run when its context is cancelled; a
// checkpoint was written first.
var ErrInterrupted = errors.New("train: interrupted (checkpoint written)")

// Status is what a running loop reports after every env step.
type Status struct {
	Step, Steps int
	LastEval    float64 // NaN before the first evaluation
	ModelLoss   float64 // last holdout loss, NaN before the first fit
	RolloutLen  int
	Message     string // set for events worth a log line (evaluation, model fit, checkpoint)
}

// Online is one online run: MBPO's loop with an ADM (admpo), an ensemble
// (mbpo) or no model (sac).
type Online struct {
	Cfg OnlineConfig
	Dir string

	task      *envs.Task
	env, eval *envs.Env
	sac       *SAC
	real      *Replay
	model     *Replay // nil for sac and before the first roll-out
	dyn       Dynamics
	rng       *rand.Rand
	srcs      rngSources

	step       int
	obs        []float32
	epReturn   float64
	lastReturn float64
	lastFit    FitReport
	lastSAC    SACStats
	rolloutLen int
	lastEval   float64
	evals      int
	wallBefore float64 // seconds spent before a resume
	started    time.Time
	progress   *Progress
	batch      *Batch
	onStatus   func(Status)
}

// NewOnline prepares a fresh run in dir (created; must not already hold a run).
func NewOnline(cfg OnlineConfig, dir string) (*Online, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return nil, fmt.Errorf("train: %s already holds a run: use --resume %s, or another --out", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	o, err := newOnline(cfg, dir)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg.JSON(), 0o644); err != nil {
		return nil, err
	}
	if o.progress, err = OpenProgress(dir, -1); err != nil {
		return nil, err
	}
	o.obs = f32(o.env.Reset(cfg.Seed))
	return o, nil
}

func newOnline(cfg OnlineConfig, dir string) (*Online, error) {
	blas.Use()
	blas.SetThreads(cfg.BLASThreads)
	o := &Online{Cfg: cfg, Dir: dir, lastEval: math.NaN(), lastReturn: math.NaN()}
	var err error
	if o.env, err = envs.Make(cfg.Env); err != nil {
		return nil, err
	}
	if o.eval, err = envs.Make(cfg.Env); err != nil {
		return nil, err
	}
	o.task = o.env.Task
	od, ad := o.task.ObsDim, o.task.ActDim
	sc := DefaultSACConfig(ad)
	sc.Hidden, sc.BatchSize, sc.TargetEntropy, sc.Seed, sc.Tau = cfg.Hidden, cfg.Batch, cfg.TargetEntropy, cfg.Seed, cfg.Tau
	sc.ActorLR, sc.CriticLR, sc.AlphaLR = cfg.LR, cfg.LR, cfg.LR
	if o.sac, err = NewSAC(od, o.env.ActionLow(), o.env.ActionHigh(), sc); err != nil {
		return nil, err
	}
	if o.real, err = NewReplay(od, ad, cfg.Steps, cfg.Seed+1); err != nil {
		return nil, err
	}
	o.seedRNGs()
	o.batch = NewBatch(cfg.Batch, od, ad)
	switch cfg.Algo {
	case "admpo":
		o.dyn, err = NewADMDynamics(cfg, od, ad)
	case "mbpo":
		o.dyn, err = NewEnsembleDynamics(cfg, od, ad)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// OnStatus sets a callback run after every env step (progress display).
func (o *Online) OnStatus(f func(Status)) { o.onStatus = f }

// Close frees the simulators and graphs.
func (o *Online) Close() {
	if o.progress != nil {
		o.progress.Close()
	}
	o.env.Close()
	o.eval.Close()
	o.sac.Close()
}

// Run continues the loop until Cfg.Steps env steps or ctx is cancelled,
// then writes the final policy (and model) as ONNX files.
func (o *Online) Run(ctx context.Context) error {
	if err := o.runTo(ctx, o.Cfg.Steps); err != nil {
		return err
	}
	return o.exportFinal()
}

// runTo runs the loop until env step stop.
func (o *Online) runTo(ctx context.Context, stop int) error {
	o.started = time.Now()
	c := o.Cfg
	for o.step < stop {
		if ctx.Err() != nil {
			if err := o.Checkpoint(); err != nil {
				return fmt.Errorf("train: interrupted, and the checkpoint failed: %w", err)
			}
			return ErrInterrupted
		}
		msg := ""
		if o.dyn != nil && o.step >= c.WarmUp && (o.step-c.WarmUp)%c.ModelEvery == 0 {
			var err error
			if msg, err = o.modelRound(); err != nil {
				return err
			}
		}
		if err := o.envStep(); err != nil {
			return err
		}
		if o.step > c.WarmUp {
			for g := 0; g < c.UpdatesPerStep; g++ {
				if err := o.update(); err != nil {
					return err
				}
			}
		}
		if o.step%c.EvalEvery == 0 || o.step == c.Steps {
			m, s, err := o.evaluate()
			if err != nil {
				return err
			}
			msg = fmt.Sprintf("step %d: eval return %.1f ± %.1f", o.step, m, s)
			if err := o.log(m, s); err != nil {
				return err
			}
		}
		if o.step%c.CheckpointEvery == 0 || o.step == c.Steps {
			if err := o.Checkpoint(); err != nil {
				return err
			}
		}
		if o.onStatus != nil {
			loss := math.NaN()
			if o.lastFit.Epochs > 0 {
				loss = o.lastFit.HoldoutLoss
			}
			o.onStatus(Status{Step: o.step, Steps: c.Steps, LastEval: o.lastEval, ModelLoss: loss,
				RolloutLen: o.rolloutLen, Message: msg})
		}
	}
	return nil
}

// envStep takes one real step: uniform random during warm-up, else the
// stochastic policy.
func (o *Online) envStep() error {
	ad := o.task.ActDim
	act := make([]float64, ad)
	if o.step < o.Cfg.WarmUp {
		lo, hi := o.env.ActionLow(), o.env.ActionHigh()
		for i := range act {
			act[i] = lo[i] + o.rng.Float64()*(hi[i]-lo[i])
		}
	} else {
		a, err := o.sac.Act(o.obs, false, o.rng)
		if err != nil {
			return err
		}
		for i, v := range a {
			act[i] = float64(v)
		}
	}
	st, err := o.env.Step(act)
	if err != nil {
		return err
	}
	next := f32(st.Obs)
	if err := o.real.Add(o.obs, f32(act), float32(st.Reward), next, st.Terminated, st.Truncated); err != nil {
		return err
	}
	o.epReturn += st.Reward
	o.step++
	if st.Terminated || st.Truncated {
		o.lastReturn, o.epReturn = o.epReturn, 0
		next = f32(o.env.ResetNext())
	}
	o.obs = next
	return nil
}

// update is one SAC update on a real/model mixture.
func (o *Online) update() error {
	if err := o.fillBatch(); err != nil {
		return err
	}
	st, err := o.sac.Update(o.batch)
	if err != nil {
		return err
	}
	o.lastSAC = st
	return nil
}

// fillBatch samples round(RealRatio·Batch) real rows and the rest from the
// model buffer (all real while the model buffer is empty or absent).
func (o *Online) fillBatch() error {
	b := o.batch
	nReal := b.N
	if o.model != nil && o.model.Len() > 0 {
		nReal = int(math.Round(o.Cfg.RealRatio * float64(b.N)))
	}
	if err := o.real.SampleRows(b, 0, nReal); err != nil {
		return err
	}
	if nReal < b.N {
		return o.model.SampleRows(b, nReal, b.N-nReal)
	}
	return nil
}

// modelRound re-fits the dynamics model, exports it and the policy to ONNX,
// rolls out from real start sequences and refills the model buffer.
func (o *Online) modelRound() (string, error) {
	t0 := time.Now()
	rep, err := o.dyn.Fit(o.real, o.rng)
	if err != nil {
		return "", fmt.Errorf("train: model fit at step %d: %w", o.step, err)
	}
	o.lastFit = rep
	fitS := time.Since(t0).Seconds()
	t1 := time.Now()
	opts := infer.Options{Provider: o.Cfg.Provider, Threads: o.Cfg.Threads}
	roller, err := o.dyn.Roller(opts)
	if err != nil {
		return "", err
	}
	defer roller.Close()
	pol, err := o.policy(opts)
	if err != nil {
		return "", err
	}
	defer pol.Close()
	o.rolloutLen = o.Cfg.Rollout.At(o.step)
	starts, err := o.real.SampleStarts(o.Cfg.RolloutBatch, o.dyn.M(), o.rng)
	if err != nil {
		return "", err
	}
	tr, err := roller.Rollout(pol, starts, infer.RollConfig{Horizon: o.rolloutLen, Done: o.task.Done}, o.rng)
	if err != nil {
		return "", fmt.Errorf("train: roll-out at step %d: %w", o.step, err)
	}
	capacity := o.Cfg.ModelRetain * o.Cfg.RolloutBatch * o.rolloutLen
	if o.model == nil {
		if o.model, err = NewReplay(o.task.ObsDim, o.task.ActDim, capacity, 0); err != nil {
			return "", err
		}
		o.model.rng = rand.New(o.srcs.model)
	} else if o.model, err = o.model.Resized(capacity); err != nil {
		return "", err
	}
	if err := o.model.AddTransitions(tr); err != nil {
		return "", err
	}
	return fmt.Sprintf("step %d: model fit %d epochs (holdout %.4f, %.1fs); roll-out %d x H=%d -> %d transitions (%.1fs)",
		o.step, rep.Epochs, rep.HoldoutLoss, fitS, o.Cfg.RolloutBatch, o.rolloutLen, tr.N, time.Since(t1).Seconds()), nil
}

// evaluate runs EvalEpisodes deterministic episodes with fixed seeds.
func (o *Online) evaluate() (mean, std float64, err error) {
	rets := make([]float64, o.Cfg.EvalEpisodes)
	for ep := range rets {
		obs := f32(o.eval.Reset(o.Cfg.Seed*1000003 + int64(1000*o.evals+ep)))
		act := make([]float64, o.task.ActDim)
		for {
			a, err := o.sac.Act(obs, true, nil)
			if err != nil {
				return 0, 0, err
			}
			for i, v := range a {
				act[i] = float64(v)
			}
			st, err := o.eval.Step(act)
			if err != nil {
				return 0, 0, err
			}
			rets[ep] += st.Reward
			if st.Terminated || st.Truncated {
				break
			}
			obs = f32(st.Obs)
		}
	}
	o.evals++
	for _, r := range rets {
		mean += r
	}
	mean /= float64(len(rets))
	for _, r := range rets {
		std += (r - mean) * (r - mean)
	}
	std = math.Sqrt(std / float64(len(rets)))
	o.lastEval = mean
	return mean, std, nil
}

func (o *Online) log(evalMean, evalStd float64) error {
	r := Record{Step: o.step, Wall: o.wallBefore + time.Since(o.started).Seconds(), EvalMean: evalMean, EvalStd: evalStd,
		TrainReturn: o.lastReturn, ModelTrainLoss: math.NaN(), ModelHoldoutLoss: math.NaN(), RolloutLen: o.rolloutLen,
		Alpha: math.NaN(), CriticLoss: math.NaN(), ActorLoss: math.NaN()}
	if o.dyn != nil && o.lastFit.Epochs > 0 {
		r.ModelTrainLoss, r.ModelHoldoutLoss, r.ModelHoldoutPerK = o.lastFit.TrainLoss, o.lastFit.HoldoutLoss, o.lastFit.HoldoutPerK
	}
	if o.model != nil {
		r.ModelBuffer = o.model.Len()
	}
	if o.sac.Updates > 0 {
		r.Alpha, r.CriticLoss, r.ActorLoss = o.lastSAC.Alpha, o.lastSAC.CriticLoss, o.lastSAC.ActorLoss
	}
	return o.progress.Log(r)
}

// policy exports the current actor to ONNX in memory and opens it.
func (o *Online) policy(opts infer.Options) (*infer.Policy, error) {
	b, err := o.actorONNX()
	if err != nil {
		return nil, err
	}
	return infer.OpenPolicy(b, opts)
}

func (o *Online) actorONNX() ([]byte, error) {
	return onnx.ExportActor(o.sac.Actor, map[string]string{"task": o.Cfg.Env, "algo": o.Cfg.Algo,
		"env_step": strconv.Itoa(o.step)})
}

// exportFinal writes the final policy (and model) as ONNX files in the run
// directory.
func (o *Online) exportFinal() error {
	b, err := o.actorONNX()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Dir, "policy.onnx"), b, 0o644); err != nil {
		return err
	}
	if o.dyn != nil && o.lastFit.Epochs > 0 {
		b, err := o.dyn.ExportONNX()
		if err != nil {
			return err
		}
		name := "adm.onnx"
		if o.Cfg.Algo == "mbpo" {
			name = "ensemble.onnx"
		}
		return atomicfile.WriteFile(filepath.Join(o.Dir, name), b, 0o644)
	}
	return nil
}

// Step is the number of env steps taken so far.
func (o *Online) Step() int { return o.step }
