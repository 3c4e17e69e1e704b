package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
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

	loop // the model buffer stays nil for sac

	env        *envs.Env // the training episodes
	obs        []float32 // nil: a remote env's next episode is yet to start (see envStep)
	evalDue    bool      // the evaluation at this step failed (a remote env's server went away): redo it first
	epReturn   float64
	lastReturn float64
	rolloutLen int
	lastEval   float64
	starts     *buffer.Replay // where RolloutActor draws its starts (DrawStartsFrom); nil: real

	// CheckpointInterval, when positive, also checkpoints at the end of
	// the first env step that ends this long after the last checkpoint (or
	// the start), so that a run killed without warning loses about this
	// much work at most, whatever its speed (checkpoint_every counts env
	// steps). NewOnline and ResumeOnline set DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	lastCheckpoint     time.Time // when the last checkpoint was written (or the run started here)
}

// DefaultCheckpointInterval is Online.CheckpointInterval of a new or
// resumed run.
const DefaultCheckpointInterval = 10 * time.Minute

// NewOnline prepares a fresh run in dir (created; must not already hold a run).
func NewOnline(cfg OnlineConfig, dir string) (*Online, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rundir.Dir(dir).HasRun() {
		return nil, prepareRunDir(dir) // its error
	}
	// The environment first: a remote one that is down leaves no run
	// directory behind.
	o, err := newOnline(cfg, dir)
	if err != nil {
		return nil, err
	}
	obs := o.env.Reset(cfg.Seed)
	if obs == nil {
		o.Close()
		return nil, fmt.Errorf("train: the first reset: %w", o.env.Err())
	}
	o.obs = envs.Float32(obs)
	if err := prepareRunDir(dir); err != nil {
		o.Close()
		return nil, err
	}
	if err := startRun(o, dir, o.Cfg.JSON()); err != nil {
		return nil, err
	}
	return o, nil
}

func newOnline(cfg OnlineConfig, dir string) (*Online, error) {
	blas.Use()
	blas.SetThreads(cfg.BLASThreads)
	o := &Online{Cfg: cfg, Dir: dir, lastEval: math.NaN(), lastReturn: math.NaN(),
		CheckpointInterval: DefaultCheckpointInterval, lastCheckpoint: time.Now()}
	var task *envs.Task // the built-in task or task file (nil for a remote env)
	var err error
	if !cfg.IsRemote() {
		if task, err = cfg.Task(); err != nil {
			return nil, err
		}
	}
	if o.env, err = openEnv(&o.Cfg, task); err != nil {
		return nil, err
	}
	if o.eval, err = openEnv(&o.Cfg, task); err != nil {
		o.env.Close()
		return nil, err
	}
	cfg = o.Cfg
	// Roll-outs' termination rule (learned: set before every roll-out);
	// DoneSpec is the task's rule as data (a device roll-out's), nil
	// unless the rule is the task's.
	rt := *o.env.Task
	switch cfg.RolloutTermination() {
	case "task":
		if rt.Done == nil {
			o.Close()
			if cfg.IsRemote() {
				return nil, fmt.Errorf("train: the remote environment %s has no termination rule on observations: use termination learned or none", cfg.Env)
			}
			return nil, fmt.Errorf("train: task %s has no termination rule on observations (its rule reads values the observation leaves out): use termination learned or none", rt.Name)
		}
	case "none", "learned":
		rt.Done, rt.DoneSpec = func([]float32) bool { return false }, nil
	}
	o.task = &rt
	od, ad := o.task.ObsDim, o.task.ActDim
	sc := cfg.sacConfig(o.env.ActionLow(), o.env.ActionHigh())
	if o.sac, err = sac.New(od, o.env.ActionLow(), o.env.ActionHigh(), sc); err != nil {
		return nil, err
	}
	if o.dev, err = newDevLearner(cfg.Device, o.sac); err != nil {
		o.Close()
		return nil, err
	}
	if o.real, err = buffer.New(od, ad, cfg.TotalSteps(), cfg.Seed+1); err != nil {
		return nil, err
	}
	dc := cfg.dynamicsConfig()
	dc.Device, dc.DeviceGraph = o.dev.device() // the ADM's fits run on the SAC learner's device
	if o.rollDev, err = openRollDevice(cfg.RolloutDevice, cfg.Device, o.dev, &dc); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.initParts(cfg.Seed*7, cfg.Version, cfg.Batch, od, ad, cfg.Algo, "mbpo", dc); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// OnStatus sets a callback run after every env step (progress display).
func (o *Online) OnStatus(f func(Status)) { o.onStatus = f }

// Close frees the simulators and graphs.
func (o *Online) Close() {
	o.loop.close()
	o.env.Close()
}

// openLogs opens progress.csv and progress.jsonl (see OpenProgress) and
// the TensorBoard log.
func (o *Online) openLogs(keepUpTo int) (err error) {
	if o.progress, err = OpenProgress(o.Dir, keepUpTo); err != nil {
		return err
	}
	return o.openTB(o.Dir, keepUpTo)
}

// Run continues the loop until Cfg.TotalSteps() env steps or ctx is
// cancelled, then writes the final policy (and model) as ONNX files.
func (o *Online) Run(ctx context.Context) error { return runToEnd(ctx, o, o.Cfg.TotalSteps()) }

// RunTo runs the loop until env step stop (or ctx is cancelled:
// ErrInterrupted, after a checkpoint); Run also exports the final files.
func (o *Online) RunTo(ctx context.Context, stop int) error {
	o.started = time.Now()
	c := o.Cfg
	total := c.TotalSteps()
	if o.evalDue { // the evaluation a remote env's failure cut short
		msg, err := o.endOfStep(total)
		if err != nil {
			return err
		}
		o.report(total, o.lastEval, o.rolloutLen, msg)
	}
	for o.step < stop {
		if err := stopIfCancelled(ctx, o.Checkpoint); err != nil {
			return err
		}
		var msg string
		if o.dyn != nil && o.step >= c.WarmUp && (o.step-c.WarmUp)%c.ModelEvery == 0 {
			var err error
			if msg, err = o.interruptibleRound(ctx, o.Checkpoint, o.modelRound); err != nil {
				return err
			}
		}
		if err := o.envStep(); err != nil {
			return o.envFailed(err)
		}
		if o.step > c.WarmUp {
			if err := timed(&o.time.Update, func() error {
				for g := 0; g < c.UpdatesPerStep; g++ {
					if err := o.sacUpdate(o.Cfg.RealRatio); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		m, err := o.endOfStep(total)
		if err != nil {
			return err
		}
		if m != "" {
			msg = m
		}
		o.report(total, o.lastEval, o.rolloutLen, msg)
	}
	return nil
}

// endOfStep evaluates and writes the checkpoint when the current step is
// due them, and returns the evaluation's message ("" without one).
func (o *Online) endOfStep(total int) (msg string, err error) {
	c := o.Cfg
	if o.evalDue || o.step%c.EvalEvery == 0 || o.step == total {
		var m, s float64
		if err := timed(&o.time.Eval, func() (err error) {
			m, s, err = o.evaluate()
			return err
		}); err != nil {
			if c.IsRemote() {
				o.evalDue = true
				return "", o.envFailed(err)
			}
			return "", err
		}
		o.evalDue = false
		msg = fmt.Sprintf("step %d: eval return %.1f ± %.1f", o.step, m, s)
		if err := o.log(m, s); err != nil {
			return "", err
		}
	}
	due := o.CheckpointInterval > 0 && time.Since(o.lastCheckpoint) >= o.CheckpointInterval
	if o.step%c.CheckpointEvery == 0 || o.step == total || due {
		if err := o.Checkpoint(); err != nil {
			return "", err
		}
	}
	return msg, nil
}

// envStep takes one real step: uniform random during warm-up, else the
// stochastic policy. A remote env starts its next episode here rather than
// at the end of the last one, so that a failed request leaves the run
// state as it was (a step it may redo after a resume).
func (o *Online) envStep() error {
	if o.obs == nil {
		obs := o.env.ResetNext()
		if obs == nil {
			return o.env.Err()
		}
		o.obs = envs.Float32(obs)
	}
	var actor envs.Actor = sacActor{s: o.sac}
	if o.step < o.Cfg.WarmUp {
		actor = envs.UniformActor{Low: o.env.ActionLow(), High: o.env.ActionHigh()}
	}
	act := make([]float64, o.task.ActDim)
	if err := actor.Act(o.obs, o.rng, act); err != nil {
		return err
	}
	st, err := o.env.Step(act)
	if err != nil {
		return err
	}
	next := envs.Float32(st.Obs)
	if err := o.real.Add(o.obs, envs.Float32(act), float32(st.Reward), next, st.Terminated, st.Truncated); err != nil {
		return err
	}
	o.epReturn += st.Reward
	o.step++
	if st.Terminated || st.Truncated {
		o.lastReturn, o.epReturn = o.epReturn, 0
		if o.Cfg.IsRemote() {
			next = nil
		} else {
			next = envs.Float32(o.env.ResetNext())
		}
	}
	o.obs = next
	return nil
}

// fillBatch fills the SAC batch with Cfg.RealRatio real rows and model rows.
func (o *Online) fillBatch() error { return o.mixBatch(o.Cfg.RealRatio) }

// modelRound re-fits the dynamics model, exports it and the policy to ONNX,
// rolls out from real start sequences and refills the model buffer. A
// cancelled ctx stops the fit or the roll-out with ctx's error before the
// model buffer or the roll-out length change (see interruptibleRound).
func (o *Online) modelRound(ctx context.Context) (string, error) {
	t0 := time.Now()
	budget := 0
	if r := o.Cfg.ModelStepsPerRow; r > 0 {
		budget = int(math.Ceil(r * float64(o.step-o.fitAt)))
	}
	rep, err := o.dyn.Fit(ctx, o.real, budget, o.rng)
	fitS := time.Since(t0).Seconds()
	o.time.Fit += fitS
	if err != nil {
		return "", fmt.Errorf("train: model fit at step %d: %w", o.step, err)
	}
	o.lastFit, o.fitAt = rep, o.step
	t1 := time.Now()
	defer func() { o.time.Rollout += time.Since(t1).Seconds() }()
	actor, err := o.ActorONNX()
	if err != nil {
		return "", err
	}
	termMsg := ""
	if o.Cfg.RolloutTermination() == "learned" {
		if termMsg, err = o.learnTermination(); err != nil {
			return "", err
		}
	}
	h := o.Cfg.Rollout.At(o.Cfg.ScheduleStep(o.step))
	tr, err := o.rolloutActor(ctx, actor, true, o.real, o.Cfg.RolloutBatch, h, false, fmt.Sprintf("step %d", o.step))
	if err != nil {
		return "", err
	}
	o.rolloutLen = h
	if err := o.addModel(tr, o.Cfg.ModelRetain*o.Cfg.RolloutBatch*o.rolloutLen); err != nil {
		return "", err
	}
	return fmt.Sprintf("step %d: model fit %d epochs (holdout %.4f, %.1fs); roll-out %d x H=%d -> %d transitions (%.1fs)%s%s",
		o.step, rep.Epochs, rep.HoldoutLoss, fitS, o.Cfg.RolloutBatch, o.rolloutLen, tr.N, time.Since(t1).Seconds(), termMsg, o.rolloutNote()), nil
}

// rolloutActor rolls an ONNX actor (own: the run's SAC actor) out in the
// model for h steps from n start sequences drawn from starts, with U when
// wantU; where names it in errors.
func (o *Online) rolloutActor(ctx context.Context, actor []byte, own bool, starts *buffer.Replay, n, h int, wantU bool, where string) (*infer.Transitions, error) {
	return o.rollPolicy(actor, own, o.Cfg.inferOptions(), starts, n,
		infer.RollConfig{Horizon: h, WantU: wantU, Done: o.task.Done, Context: ctx}, where, o.Cfg.FullHistoryStarts())
}

// RolloutActor runs one roll-out of an ONNX actor in the run's model (the
// ADM or the ensemble) from n start sequences, with U (U^ADM, or the
// ensemble's max-std) computed, for the run's current roll-out length; the
// starts are drawn from the run's real buffer, or from the one
// DrawStartsFrom loaded. The starts and the roll-out's noise come from a
// source seeded seed; the run's own random sources are left as they were.
// It examines a run's model with any policy of its task's sizes (the
// diagnosis in package experiments); a run with termination learned first
// refits its termination rule on its own buffer, as before its roll-outs.
func (o *Online) RolloutActor(ctx context.Context, actor []byte, n int, seed int64) (*infer.Transitions, error) {
	return o.RolloutActorWith(ctx, actor, n, seed, RolloutOptions{})
}

// RolloutActorWith is RolloutActor with the extras of opt (the model's
// means, no MC dropout); the run's own roll-outs are left as they were.
func (o *Online) RolloutActorWith(ctx context.Context, actor []byte, n int, seed int64, opt RolloutOptions) (*infer.Transitions, error) {
	if o.dyn == nil {
		return nil, fmt.Errorf("train: %s: a %s run has no model to roll out in", o.Dir, o.Cfg.Algo)
	}
	if !o.Fitted() {
		return nil, fmt.Errorf("train: %s: the model was never fitted", o.Dir)
	}
	if o.Cfg.RolloutTermination() == "learned" {
		if _, err := o.learnTermination(); err != nil {
			return nil, err
		}
	}
	h := o.rolloutLen
	if h <= 0 {
		h = o.Cfg.Rollout.At(o.Cfg.ScheduleStep(o.step))
	}
	starts := o.real
	if o.starts != nil {
		starts = o.starts
	}
	return o.diagnosing(seed, opt, func() (*infer.Transitions, error) {
		return o.rolloutActor(ctx, actor, false, starts, n, h, true, "diagnosis")
	})
}

// Fitted tells whether the run's model has been fitted (a sac run has
// none).
func (o *Online) Fitted() bool { return o.dyn != nil && o.lastFit.Epochs > 0 }

// DrawStartsFrom makes later RolloutActor calls draw their start sequences
// from the real replay buffer in the last checkpoint of the online run in
// dir, which must play the same task, rather than from this run's own: two
// runs' models then roll out from the same buffer's states. dir may be the
// run's own directory (the buffer as checkpointed).
func (o *Online) DrawStartsFrom(dir string) error {
	var cfg OnlineConfig
	f, err := loadCheckpoint(dir, rundir.Online, &cfg)
	if err != nil {
		return err
	}
	if cfg.Env != o.Cfg.Env || cfg.EnvDigest != o.Cfg.EnvDigest {
		return fmt.Errorf("train: %s played %s, the run %s: its buffer holds another task's states", dir, cfg.Env, o.Cfg.Env)
	}
	r, err := buffer.Load(f, "real")
	if err != nil {
		return fmt.Errorf("train: %s: %w", dir, err)
	}
	if r.ObsDim != o.task.ObsDim || r.ActDim != o.task.ActDim {
		return fmt.Errorf("train: %s: its buffer holds %d observation and %d action values, the run's task %d and %d",
			dir, r.ObsDim, r.ActDim, o.task.ObsDim, o.task.ActDim)
	}
	o.starts = r
	return nil
}

// learnTermination fits the roll-outs' termination rule on the real
// transitions so far (FitTermination), before every roll-out of a run with
// termination learned (a task file's or a remote environment's); without a
// terminal among them the roll-outs never terminate. The fit is a function
// of the buffer, so a resumed run refits the same rule from its restored
// buffer. It returns a note for the model round's message.
func (o *Online) learnTermination() (string, error) {
	terminals := 0
	var d *datasets.Dataset
	if o.real.Len() > 0 {
		var err error
		if d, err = o.real.Dataset(0); err != nil {
			return "", fmt.Errorf("train: termination fit at step %d: %w", o.step, err)
		}
		for _, t := range d.Terminal {
			if t {
				terminals++
			}
		}
	}
	if terminals == 0 {
		o.task.Done = func([]float32) bool { return false }
		return "; no terminations seen: roll-outs never terminate", nil
	}
	m, err := FitTermination(d)
	if err != nil {
		return "", fmt.Errorf("train: termination fit at step %d: %w", o.step, err)
	}
	o.task.Done = m.Done
	return fmt.Sprintf("; termination learned from %d terminations (accuracy %.3f, recall %.2f)", terminals, m.Accuracy, m.Recall), nil
}

// evaluate runs EvalEpisodes deterministic episodes with fixed seeds.
func (o *Online) evaluate() (mean, std float64, err error) {
	rets, err := o.evalReturns(o.Cfg.Seed, o.Cfg.EvalEpisodes)
	if err != nil {
		return 0, 0, err
	}
	mean, std = stats.MeanStd(rets)
	o.lastEval = mean
	return mean, std, nil
}

func (o *Online) log(evalMean, evalStd float64) error {
	r, err := o.record(evalMean, evalStd, o.rolloutLen)
	if err != nil {
		return err
	}
	r.TrainReturn = o.lastReturn
	if err := o.progress.Log(r); err != nil {
		return err
	}
	return o.logTB(r, progressScalars(r, "eval/return", o.dyn != nil))
}

// ActorONNX exports the current actor as an ONNX file.
func (o *Online) ActorONNX() ([]byte, error) {
	a, err := o.sac.HostActor()
	if err != nil {
		return nil, err
	}
	return onnx.ExportActor(a, map[string]string{"task": o.Cfg.Env, "algo": o.Cfg.Algo,
		"env_step": strconv.Itoa(o.step)})
}

// ExportFinal writes the final policy (and model) as ONNX files in the run
// directory.
func (o *Online) ExportFinal() error {
	b, err := o.ActorONNX()
	if err != nil {
		return err
	}
	return o.writeFinal(o.Dir, b, o.lastFit.Epochs > 0)
}

// Step is the number of env steps taken so far.
func (o *Online) Step() int { return o.step }

// LastEval is the mean return of the last evaluation (NaN before the
// first).
func (o *Online) LastEval() float64 { return o.lastEval }
