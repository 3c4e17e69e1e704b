package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// Offline is one offline run on a fixed data set: MOPO's loop with an ADM
// and the U^ADM penalty (admpo, i.e. ADMPO-OFF), with MOPO's ensemble and
// max-std penalty (mopo), or behaviour cloning (bc). The model is fitted
// once, on the whole data set, before the first policy update; every
// RolloutEvery updates the current policy is rolled out from data set start
// sequences and the penalised transitions refill the model buffer; each
// update is one SAC step on a batch of RealRatio data set rows and model rows.
// After every epoch the deterministic policy is evaluated in the real task.
type Offline struct {
	Cfg OfflineConfig
	Dir string

	loop // real holds the data set; the model buffer stays nil for bc

	bc        *sac.BC
	bcDev     *devBC // runs bc's steps on a device; nil on the CPU
	bcFresh   bool   // bc stepped since lastBC was read
	dataSum   uint32
	fitted    bool
	lastBC    float64
	lastRoll  RollStats
	lastScore float64             // normalised score of the last evaluation
	fitCurve  []dynamics.FitEpoch // the model fit's epochs so far (model_fit.csv)
	fitLogErr error               // the first error writing model_fit.csv during the fit
	olog      *offlineLog

	// FitCheckpointEvery is the least time between two checkpoints inside
	// the model fit (at epoch starts; 0: at every epoch). An interrupt
	// checkpoints the fit where it stands whatever this is.
	FitCheckpointEvery time.Duration
	fitSnap            []byte    // the unfinished model fit's last snapshot (nil: none)
	fitSnapEpoch       int       // the epoch fitSnap continues in
	fitMark            time.Time // when the fit's time was last added to time.Fit
}

// DefaultFitCheckpointEvery is Offline.FitCheckpointEvery of a new or
// resumed run.
const DefaultFitCheckpointEvery = 10 * time.Minute

// NewOffline prepares a fresh run in dir on the data set file named by
// cfg.Dataset. Nothing is written unless the data set is valid and the run
// is built: only then is dir created (it must not already hold a run), so
// a failed start leaves no run directory behind.
func NewOffline(cfg OfflineConfig, dir string) (*Offline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rundir.Dir(dir).HasRun() {
		return nil, fmt.Errorf("train: %s already holds a run: use --resume %s, or another --out", dir, dir)
	}
	o, err := newOffline(cfg, dir)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dir)
	if err := prepareRunDir(dir); err != nil {
		o.Close()
		return nil, err
	}
	if err := startRun(o, dir, o.Cfg.JSON()); err != nil {
		if os.IsNotExist(statErr) {
			os.RemoveAll(dir) // made here: leave nothing behind
		}
		return nil, err
	}
	return o, nil
}

// actionRange is the data's per-dimension action range, widened by 1e-3
// where an action is constant: the bounds of a policy for data without a
// task.
func actionRange(d *datasets.Dataset) (low, high []float64) {
	ad := d.ActDim
	low, high = make([]float64, ad), make([]float64, ad)
	for j := 0; j < ad; j++ {
		low[j], high[j] = math.Inf(1), math.Inf(-1)
	}
	for i := 0; i < d.N; i++ {
		for j, v := range d.Act[i*ad : (i+1)*ad] {
			low[j], high[j] = math.Min(low[j], float64(v)), math.Max(high[j], float64(v))
		}
	}
	for j := range low {
		if high[j]-low[j] < 1e-6 {
			low[j], high[j] = low[j]-1e-3, high[j]+1e-3
		}
	}
	return low, high
}

// Terminations lists the offline runs' termination rules for model
// roll-outs.
var Terminations = []string{"task", "none", "learned"}

// newOffline builds the run from cfg and its data set without touching
// dir. Without a task (cfg.Env empty) there is no evaluation, the sizes and
// the action bounds come from the data, and the termination rule is none
// or learned; cfg's data keys (obs_dim, act_dim, termination, ...) are
// filled in o.Cfg.
func newOffline(cfg OfflineConfig, dir string) (*Offline, error) {
	blas.Use()
	blas.SetThreads(cfg.BLASThreads)
	o := &Offline{Cfg: cfg, Dir: dir, lastScore: math.NaN(), lastBC: math.NaN(), FitCheckpointEvery: DefaultFitCheckpointEvery}
	data, err := datasets.Read(cfg.Dataset)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Offline, error) {
		o.Close()
		return nil, fmt.Errorf("train: data set %s: %w", cfg.Dataset, err)
	}
	if err := data.Validate(data.ObsDim, data.ActDim); err != nil {
		return fail(err)
	}
	if err := data.CheckEpisodes(); err != nil {
		return fail(err)
	}
	c := &o.Cfg
	if c.ObsDim == 0 && c.ActDim == 0 { // a fresh run, or a config from before these keys

		c.ObsDim, c.ActDim = data.ObsDim, data.ActDim
	}
	if c.Termination == "" {
		c.Termination = "task"
	}
	var low, high []float64
	done := func([]float32) bool { return false }
	var spec *rollout.DoneSpec // done as data (termination task), for a device roll-out
	if c.Env != "" {
		if remote.IsAddress(c.Env) {
			o.eval, err = dialRemote(c.Env, &c.Remote)
		} else {
			var task *envs.Task
			if task, err = c.Task(); err == nil {
				o.eval, err = envs.MakeTask(task)
			}
		}
		if err != nil {
			o.Close()
			return nil, err
		}
		t := o.eval.Task
		if t.ObsDim != c.ObsDim || t.ActDim != c.ActDim {
			return fail(fmt.Errorf("the data have %d observation and %d action values, the task %s %d and %d",
				c.ObsDim, c.ActDim, t.Name, t.ObsDim, t.ActDim))
		}
		low, high, done, spec = o.eval.ActionLow(), o.eval.ActionHigh(), t.Done, t.DoneSpec
	} else {
		if c.Termination == "task" {
			return fail(fmt.Errorf("no task: the termination rule must be none or learned"))
		}
		if c.ActionLow == nil {
			c.ActionLow, c.ActionHigh = actionRange(data)
		}
		low, high = c.ActionLow, c.ActionHigh
	}
	if err := data.Validate(c.ObsDim, c.ActDim); err != nil {
		return fail(err)
	}
	switch c.Termination {
	case "task":
		if done == nil {
			return fail(fmt.Errorf("the task %s has no termination rule on observations (a remote environment, or a task file whose rule "+
				"reads values the observation leaves out): use termination learned or none", c.Env))
		}
	case "none":
		done, spec = func([]float32) bool { return false }, nil
	case "learned":
		spec = nil
		if c.TermModel == nil {
			if c.TermModel, err = FitTermination(data); err != nil {
				return fail(err)
			}
		} else if err := c.TermModel.check(c.ObsDim); err != nil {
			return fail(err)
		}
		done = c.TermModel.Done
	default:
		return fail(fmt.Errorf("unknown termination %q (%s)", c.Termination, strings.Join(Terminations, ", ")))
	}
	name := c.Env
	if name == "" {
		name = c.Name
	}
	o.task = &envs.Task{Name: name, ObsDim: c.ObsDim, ActDim: c.ActDim, Done: done, DoneSpec: spec}
	od, ad := c.ObsDim, c.ActDim
	o.dataSum = datasetSum(data)
	if o.real, err = buffer.FromDataset(data, cfg.Seed+1); err != nil {
		o.Close()
		return nil, err
	}
	sc := cfg.sacConfig(low, high)
	if o.sac, err = sac.New(od, low, high, sc); err != nil {
		o.Close()
		return nil, err
	}
	if cfg.Algo == "bc" { // BC trains the SAC agent's actor, on the device if one is set
		if o.bc, err = sac.NewBC(o.sac.Actor, cfg.Batch, cfg.ActorLR); err != nil {
			o.Close()
			return nil, err
		}
		if o.bcDev, err = newDevBC(cfg.Device, o.bc, cfg.Batch); err != nil {
			o.Close()
			return nil, err
		}
	} else if o.dev, err = newDevLearner(cfg.Device, o.sac); err != nil {
		o.Close()
		return nil, err
	}
	dc := cfg.dynamicsConfig()
	dc.OnEpoch = o.fitEpoch
	dc.Device, dc.DeviceGraph = o.dev.device() // the ADM's fits run on the SAC learner's device
	if o.rollDev, err = openRollDevice(cfg.RolloutDevice, cfg.Device, o.dev, &dc); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.initParts(cfg.Seed*11, cfg.Version, cfg.Batch, od, ad, cfg.Algo, "mopo", dc); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// OnStatus sets a callback run after every policy update.
func (o *Offline) OnStatus(f func(Status)) { o.onStatus = f }

// Close frees the simulator, the graphs and the logs.
func (o *Offline) Close() {
	if o.olog != nil {
		o.olog.close()
	}
	if o.bc != nil {
		o.bc.Close()
	}
	_ = o.bcDev.Close()
	o.loop.close()
}

// openLogs opens progress.csv and .jsonl (see OpenProgress), offline.csv
// and the TensorBoard log.
func (o *Offline) openLogs(keepUpTo int) (err error) {
	if o.progress, err = OpenProgress(o.Dir, keepUpTo); err != nil {
		return err
	}
	if o.olog, err = openOfflineLog(o.Dir, keepUpTo); err != nil {
		return err
	}
	return o.openTB(o.Dir, keepUpTo)
}

// Step is the number of policy updates done so far.
func (o *Offline) Step() int { return o.step }

// Fitted reports whether the run's dynamics model has been fitted (never,
// for BC).
func (o *Offline) Fitted() bool { return o.fitted }

// Run continues the run until Cfg.TotalSteps() updates or ctx is cancelled
// (ErrInterrupted, after a checkpoint), then writes the final policy (and
// model) as ONNX files.
func (o *Offline) Run(ctx context.Context) error { return runToEnd(ctx, o, o.Cfg.TotalSteps()) }

// RunTo runs the loop until update stop (or ctx is cancelled:
// ErrInterrupted, after a checkpoint); Run also exports the final files.
func (o *Offline) RunTo(ctx context.Context, stop int) error {
	o.started = time.Now()
	c := o.Cfg
	total := c.TotalSteps()
	if o.dyn != nil && !o.fitted {
		msg, err := o.interruptibleRound(ctx, o.Checkpoint, o.fit)
		if err != nil {
			return err
		}
		if err := o.Checkpoint(); err != nil {
			return err
		}
		o.status(msg)
	}
	for o.step < stop {
		if err := stopIfCancelled(ctx, o.Checkpoint); err != nil {
			return err
		}
		var msg string
		if o.dyn != nil && o.step%c.RolloutEvery == 0 {
			var err error
			if msg, err = o.interruptibleRound(ctx, o.Checkpoint, o.rolloutRound); err != nil {
				return err
			}
		}
		if err := timed(&o.time.Update, o.update); err != nil {
			return err
		}
		o.step++
		if o.step%c.StepsPerEpoch == 0 || o.step == total {
			var m string
			if err := timed(&o.time.Eval, func() (err error) {
				m, err = o.evaluate()
				return err
			}); err != nil {
				return err
			}
			if msg != "" {
				msg += "\n"
			}
			msg += m
		}
		if o.step%c.CheckpointEvery == 0 || o.step == total {
			if err := o.Checkpoint(); err != nil {
				return err
			}
		}
		o.status(msg)
	}
	return nil
}

func (o *Offline) status(msg string) { o.report(o.Cfg.TotalSteps(), o.lastScore, o.Cfg.Horizon, msg) }

// fit trains the dynamics model once on the whole data set (until ctx is
// cancelled: see interruptibleRound). A resumable model's fit continues
// from the checkpoint's snapshot (fitSnap), writes a checkpoint with a new
// one at epoch starts every FitCheckpointEvery and keeps the one it hands
// out when ctx is cancelled, for the checkpoint interruptibleRound writes.
func (o *Offline) fit(ctx context.Context) (string, error) {
	t0 := time.Now()
	o.fitMark = t0
	defer func() { o.time.Fit += time.Since(o.fitMark).Seconds() }()
	o.fitCurve, o.fitLogErr = nil, nil
	var (
		rep  dynamics.FitReport
		err  error
		cont string
	)
	if r, ok := o.dyn.(dynamics.Resumable); ok {
		if o.fitSnap != nil {
			info, err := dynamics.SnapshotInfo(o.fitSnap)
			if err != nil {
				return "", fmt.Errorf("train: model fit: %w", err)
			}
			o.fitCurve = info.Curve
			cont = fmt.Sprintf(" (continued at epoch %d, Adam step %d)", info.Epoch, info.AdamSteps)
			o.status("model fit: continuing at epoch " + strconv.Itoa(info.Epoch) + " from the checkpoint")
		}
		last := time.Now()
		rs := &dynamics.FitResume{Source: o.srcs.loop, From: o.fitSnap,
			Due: func(int) bool { return time.Since(last) >= o.FitCheckpointEvery },
			Save: func(snap []byte, epoch int, interrupted bool) error {
				o.fitSnap, o.fitSnapEpoch = snap, epoch
				if interrupted {
					return nil // interruptibleRound writes the checkpoint
				}
				last = time.Now()
				o.time.Fit += last.Sub(o.fitMark).Seconds()
				o.fitMark = last
				if err := o.Checkpoint(); err != nil {
					return err
				}
				o.status(fmt.Sprintf("model fit: checkpoint written before epoch %d", epoch))
				return nil
			}}
		rep, err = r.FitResumable(ctx, o.real, 0, o.rng, rs)
	} else {
		rep, err = o.dyn.Fit(ctx, o.real, 0, o.rng)
	}
	if err != nil {
		return "", fmt.Errorf("train: model fit: %w", err)
	}
	if o.fitLogErr != nil {
		return "", o.fitLogErr
	}
	o.lastFit, o.fitted, o.fitSnap, o.fitSnapEpoch = rep, true, nil, 0
	return fmt.Sprintf("model fit: %d epochs%s, holdout MSE %.5f, per k %s (%.1fs)", rep.Epochs, cont, rep.HoldoutLoss,
		fmtFloats(rep.HoldoutPerK), time.Since(t0).Seconds()), nil
}

// FitInterruptedAt is the epoch the unfinished model fit continues in when
// the run resumes (0: no fit snapshot is kept: the fit is done, or starts
// afresh).
func (o *Offline) FitInterruptedAt() int {
	if o.fitted || o.fitSnap == nil {
		return 0
	}
	return o.fitSnapEpoch
}

// fitEpoch reports a model fit epoch (the fit takes minutes to hours on
// D4RL-sized data) and rewrites model_fit.csv with the curve so far.
func (o *Offline) fitEpoch(e dynamics.FitEpoch) {
	o.fitCurve = append(o.fitCurve, e)
	if err := writeModelFitLog(o.Dir, o.fitCurve); err != nil && o.fitLogErr == nil {
		o.fitLogErr = err
	}
	capped := ""
	if c := o.Cfg; c.ModelMaxEpochs > 0 {
		capped = fmt.Sprintf(" of at most %d", c.ModelMaxEpochs)
	}
	o.status(fmt.Sprintf("model fit epoch %d%s: %d Adam steps, holdout MSE %.5f, train NLL %.4f (%.0fs)", e.Epoch, capped,
		e.AdamSteps, e.HoldoutLoss, e.TrainLoss, e.Seconds))
}

func fmtFloats(v []float64) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += strconv.FormatFloat(x, 'g', 4, 64)
	}
	return s + "]"
}

// rolloutRound rolls the current policy out in the model from data set start
// sequences, with the reward penalty, and adds the transitions to the model
// buffer (which keeps the last ModelRetain roll-outs). A cancelled ctx
// stops the roll-out before the model buffer changes.
func (o *Offline) rolloutRound(ctx context.Context) (string, error) {
	t0 := time.Now()
	defer func() { o.time.Rollout += time.Since(t0).Seconds() }()
	tr, err := o.rollout(ctx)
	if err != nil {
		return "", err
	}
	if err := o.addModel(tr, o.Cfg.ModelBufferSize()); err != nil {
		return "", err
	}
	o.lastRoll = rollStats(tr, o.Cfg.Penalty)
	o.lastRoll.Seconds = time.Since(t0).Seconds()
	r := o.lastRoll
	return fmt.Sprintf("update %d: roll-out %d x H=%d -> %d transitions, reward %.3f, U %.4f (max %.3f), penalty %.4f, done %.3f (%.1fs)%s",
		o.step, o.Cfg.RolloutBatch, o.Cfg.Horizon, r.Transitions, r.RewardMean, r.UMean, r.UMax, r.PenaltyMean, r.DoneFrac, r.Seconds, o.rolloutNote()), nil
}

// rollout exports the policy and runs one penalised roll-out in the model.
func (o *Offline) rollout(ctx context.Context) (*infer.Transitions, error) {
	b, err := o.ActorONNX()
	if err != nil {
		return nil, err
	}
	return o.rolloutActor(ctx, b, true, o.Cfg.RolloutBatch, fmt.Sprintf("update %d", o.step))
}

// RolloutActor runs one penalised roll-out of an ONNX actor in the run's
// model from n data set starts, the starts and the roll-out's noise drawn
// from a source seeded seed; the run's own random sources are left as they
// were. It examines a finished run's model with any policy of its task's
// sizes (the diagnosis in package experiments).
func (o *Offline) RolloutActor(ctx context.Context, actor []byte, n int, seed int64) (*infer.Transitions, error) {
	return o.RolloutActorWith(ctx, actor, n, seed, RolloutOptions{})
}

// RolloutActorWith is RolloutActor with the extras of opt (the model's
// means, no MC dropout); the run's own roll-outs are left as they were.
func (o *Offline) RolloutActorWith(ctx context.Context, actor []byte, n int, seed int64, opt RolloutOptions) (*infer.Transitions, error) {
	return o.diagnosing(seed, opt, func() (*infer.Transitions, error) {
		return o.rolloutActor(ctx, actor, false, n, "diagnosis")
	})
}

// rolloutActor runs one penalised roll-out of an ONNX actor (own: the
// run's SAC actor) in the model from n data set starts; where names it in
// errors.
func (o *Offline) rolloutActor(ctx context.Context, actor []byte, own bool, n int, where string) (*infer.Transitions, error) {
	return o.rollPolicy(actor, own, o.Cfg.inferOptions(), o.real, n,
		infer.RollConfig{Horizon: o.Cfg.Horizon, Penalty: float32(o.Cfg.Penalty), WantU: true, Done: o.task.Done, Context: ctx}, where,
		o.Cfg.FullHistoryStarts())
}

// rollStats summarises a roll-out's transitions.
func rollStats(tr *infer.Transitions, beta float64) RollStats {
	s := RollStats{Transitions: tr.N}
	if tr.N == 0 {
		return s
	}
	var rew, u, done float64
	for i := 0; i < tr.N; i++ {
		rew += float64(tr.Rew[i])
		v := float64(tr.Uncertainty[i])
		u += v
		s.UMax = math.Max(s.UMax, v)
		if tr.Done[i] {
			done++
		}
	}
	n := float64(tr.N)
	s.RewardMean, s.UMean, s.DoneFrac = rew/n, u/n, done/n
	s.PenaltyMean = beta * s.UMean
	return s
}

// update is one policy update: BC on data set rows, or SAC on a mixture.
func (o *Offline) update() error {
	if o.bc != nil {
		if err := o.real.Sample(o.batch); err != nil {
			return err
		}
		if err := o.bc.Step(o.batch); err != nil {
			return err
		}
		o.bcFresh = true
		return nil
	}
	return o.sacUpdate(o.Cfg.RealRatio)
}

// syncBC brings BC's actor and optimiser back from its device (where it
// has one) and reads its last loss into lastBC; without BC it does nothing.
func (o *Offline) syncBC() error {
	if o.bc == nil {
		return nil
	}
	if err := o.bc.Sync(); err != nil {
		return err
	}
	if o.bcFresh {
		l, err := o.bc.LastLoss()
		if err != nil {
			return err
		}
		o.lastBC, o.bcFresh = l, false
	}
	return nil
}

// evaluate runs EvalEpisodes deterministic episodes with fixed seeds and
// logs their D4RL normalised score and raw return.
func (o *Offline) evaluate() (string, error) {
	if err := o.syncBC(); err != nil {
		return "", err
	}
	if o.eval == nil {
		if err := o.log(math.NaN(), math.NaN(), math.NaN(), math.NaN()); err != nil {
			return "", err
		}
		return fmt.Sprintf("epoch %d (update %d): no evaluation (the data name no task)", o.step/o.Cfg.StepsPerEpoch, o.step), nil
	}
	rets, err := o.evalReturns(o.Cfg.Seed, o.Cfg.EvalEpisodes)
	if err != nil && o.Cfg.Remote != nil {
		return "", fmt.Errorf("train: the environment server %s failed in the evaluation at update %d (%w); "+
			"once it is back, --resume %s continues from the last checkpoint", o.Cfg.Env, o.step, err, o.Dir)
	}
	if err != nil {
		return "", err
	}
	scores := make([]float64, len(rets))
	for i, r := range rets {
		s, err := datasets.NormalizedScore(o.Cfg.Env, r)
		if err != nil || o.Cfg.EnvFile != "" {
			s = math.NaN() // a task without D4RL reference scores (a task file's, whatever its name)
		}
		scores[i] = s
	}
	rm, rs := stats.MeanStd(rets)
	sm, ss := stats.MeanStd(scores)
	o.lastScore = sm
	if math.IsNaN(sm) {
		o.lastScore = rm
	}
	if err := o.log(sm, ss, rm, rs); err != nil {
		return "", err
	}
	if math.IsNaN(sm) {
		return fmt.Sprintf("epoch %d (update %d): return %.1f ± %.1f (the task has no D4RL reference scores)",
			o.step/o.Cfg.StepsPerEpoch, o.step, rm, rs), nil
	}
	return fmt.Sprintf("epoch %d (update %d): normalised score %.1f ± %.1f, return %.1f ± %.1f",
		o.step/o.Cfg.StepsPerEpoch, o.step, sm, ss, rm, rs), nil
}

// log writes a progress row (the normalised score as eval_return_mean, or
// the raw return for tasks without D4RL scores) and an offline.csv row.
func (o *Offline) log(scoreMean, scoreStd, retMean, retStd float64) error {
	em, es := scoreMean, scoreStd
	if math.IsNaN(em) {
		em, es = retMean, retStd
	}
	rolloutLen := o.Cfg.Horizon
	if o.dyn == nil {
		rolloutLen = 0
	}
	r, err := o.record(em, es, rolloutLen)
	if err != nil {
		return err
	}
	q := math.NaN()
	if o.bc != nil {
		r.ActorLoss = o.lastBC // SAC makes no updates under bc
	} else if o.sac.Updates > 0 {
		st, err := o.sacStats() // record's copy: no second read
		if err != nil {
			return err
		}
		q = st.Q1
	}
	if err := o.progress.Log(r); err != nil {
		return err
	}
	if err := o.olog.log(OfflineRecord{Step: o.step, Epoch: o.step / o.Cfg.StepsPerEpoch, Wall: r.Wall,
		ScoreMean: scoreMean, ScoreStd: scoreStd, ReturnMean: retMean, ReturnStd: retStd, Roll: o.lastRoll,
		QMean: q, BCLoss: o.lastBC}); err != nil {
		return err
	}
	return o.logTB(r, o.tbScalars(r, scoreMean, retMean, retStd, q))
}

// tbScalars are an evaluation's TensorBoard scalars: the normalised score
// (where the task has D4RL reference scores) and the raw return, the losses
// (BC's as bc/loss), the model's holdout errors and the last roll-out's
// statistics (U is U^ADM for admpo, the ensemble's max std for mopo).
func (o *Offline) tbScalars(r Record, scoreMean, retMean, retStd, q float64) scalarList {
	evalTag := "eval/normalized_score"
	if math.IsNaN(scoreMean) { // r holds the raw return
		evalTag = "eval/return"
	}
	bcLoss := math.NaN()
	if o.bc != nil {
		bcLoss, r.ActorLoss = r.ActorLoss, math.NaN()
	}
	s := progressScalars(r, evalTag, o.dyn != nil)
	if !math.IsNaN(scoreMean) {
		s.add("eval/return_mean", retMean)
		s.add("eval/return_std", retStd)
	}
	s.add("bc/loss", bcLoss)
	s.add("sac/q_mean", q)
	if rs := o.lastRoll; rs.Transitions > 0 {
		s.add("rollout/transitions", float64(rs.Transitions))
		s.add("rollout/reward_mean", rs.RewardMean)
		s.add("rollout/u_mean", rs.UMean)
		s.add("rollout/u_max", rs.UMax)
		s.add("rollout/penalty_mean", rs.PenaltyMean)
		s.add("rollout/done_frac", rs.DoneFrac)
	}
	return s
}

// ActorONNX exports the current actor as an ONNX file.
func (o *Offline) ActorONNX() ([]byte, error) {
	if err := o.syncBC(); err != nil {
		return nil, err
	}
	a, err := o.sac.HostActor()
	if err != nil {
		return nil, err
	}
	return onnx.ExportActor(a, map[string]string{"task": o.Cfg.Env, "algo": o.Cfg.Algo + "-offline",
		"dataset": o.Cfg.Name, "update": strconv.Itoa(o.step)})
}

// ExportFinal writes the final policy (and model) as ONNX files in the run
// directory.
func (o *Offline) ExportFinal() error {
	b, err := o.ActorONNX()
	if err != nil {
		return err
	}
	return o.writeFinal(o.Dir, b, o.fitted)
}
