package train

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/rng"
	"github.com/admpo/admpo/onnx"
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

	task    *envs.Task
	eval    *envs.Env
	sac     *SAC
	bc      *BC
	real    *Replay
	model   *Replay // nil before the first roll-out and for bc
	dyn     Dynamics
	rng     *rand.Rand
	srcs    rngSources
	dataSum uint32

	step       int
	fitted     bool
	lastFit    FitReport
	lastSAC    SACStats
	lastBC     float64
	lastRoll   RollStats
	lastScore  float64 // normalised score of the last evaluation
	evals      int
	wallBefore float64
	started    time.Time
	progress   *Progress
	olog       *offlineLog
	batch      *Batch
	onStatus   func(Status)
}

// NewOffline prepares a fresh run in dir (created; must not already hold a
// run) on the data set file named by cfg.Dataset.
func NewOffline(cfg OfflineConfig, dir string) (*Offline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return nil, fmt.Errorf("train: %s already holds a run: use --resume %s, or another --out", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	o, err := newOffline(cfg, dir)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg.JSON(), 0o644); err != nil {
		o.Close()
		return nil, err
	}
	if o.progress, err = OpenProgress(dir, -1); err != nil {
		o.Close()
		return nil, err
	}
	if o.olog, err = openOfflineLog(dir, -1); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func newOffline(cfg OfflineConfig, dir string) (*Offline, error) {
	blas.Use()
	blas.SetThreads(cfg.BLASThreads)
	o := &Offline{Cfg: cfg, Dir: dir, lastScore: math.NaN(), lastBC: math.NaN()}
	var err error
	if o.eval, err = envs.Make(cfg.Env); err != nil {
		return nil, err
	}
	o.task = o.eval.Task
	od, ad := o.task.ObsDim, o.task.ActDim
	data, err := LoadOfflineDataset(cfg.Dataset, od, ad)
	if err != nil {
		o.eval.Close()
		return nil, err
	}
	o.dataSum = datasetSum(data)
	if o.real, err = ReplayFromDataset(data, cfg.Seed+1); err != nil {
		o.eval.Close()
		return nil, err
	}
	sc := DefaultSACConfig(ad)
	sc.Hidden, sc.BatchSize, sc.Gamma, sc.Seed = cfg.Hidden, cfg.Batch, cfg.Gamma, cfg.Seed
	sc.ActorLR, sc.CriticLR, sc.AlphaLR = cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR
	sc.AutoAlpha, sc.InitAlpha, sc.TargetEntropy = cfg.AutoAlpha, cfg.InitAlpha, cfg.TargetEntropy
	sc.ActorLRDecayUpdates = cfg.TotalSteps()
	if cfg.Algo == "bc" {
		sc.ActorLRDecayUpdates, sc.CriticLR, sc.AlphaLR, sc.InitAlpha = 0, 1, 1, 1
	}
	if o.sac, err = NewSAC(od, o.eval.ActionLow(), o.eval.ActionHigh(), sc); err != nil {
		o.eval.Close()
		return nil, err
	}
	if cfg.Algo == "bc" {
		if o.bc, err = NewBC(o.sac.Actor, cfg.Batch, cfg.ActorLR); err != nil {
			o.Close()
			return nil, err
		}
	}
	o.seedRNGs()
	o.batch = NewBatch(cfg.Batch, od, ad)
	switch cfg.Algo {
	case "admpo":
		o.dyn, err = NewADMDynamics(cfg.onlineView(), od, ad)
	case "mopo":
		o.dyn, err = NewEnsembleDynamics(cfg.onlineView(), od, ad)
	}
	if err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// seedRNGs gives the loop, the buffers and SAC serialisable sources.
func (o *Offline) seedRNGs() {
	s := o.Cfg.Seed
	o.rng, o.srcs.loop = rng.New(s*11 + 2)
	o.real.rng, o.srcs.real = rng.New(s*11 + 3)
	o.sac.rng, o.srcs.sac = rng.New(s*11 + 4)
	_, o.srcs.model = rng.New(s*11 + 5)
}

// OnStatus sets a callback run after every policy update.
func (o *Offline) OnStatus(f func(Status)) { o.onStatus = f }

// Close frees the simulator, the graphs and the logs.
func (o *Offline) Close() {
	if o.progress != nil {
		o.progress.Close()
	}
	if o.olog != nil {
		o.olog.close()
	}
	if o.bc != nil {
		o.bc.Close()
	}
	if o.sac != nil {
		o.sac.Close()
	}
	if o.eval != nil {
		o.eval.Close()
	}
}

// Step is the number of policy updates done so far.
func (o *Offline) Step() int { return o.step }

// Run continues the run until Cfg.TotalSteps() updates or ctx is cancelled
// (ErrInterrupted, after a checkpoint), then writes the final policy (and
// model) as ONNX files.
func (o *Offline) Run(ctx context.Context) error {
	if err := o.runTo(ctx, o.Cfg.TotalSteps()); err != nil {
		return err
	}
	return o.exportFinal()
}

// runTo runs the loop until update stop.
func (o *Offline) runTo(ctx context.Context, stop int) error {
	o.started = time.Now()
	c := o.Cfg
	total := c.TotalSteps()
	if o.dyn != nil && !o.fitted {
		msg, err := o.fit()
		if err != nil {
			return err
		}
		if err := o.Checkpoint(); err != nil {
			return err
		}
		o.status(msg)
	}
	for o.step < stop {
		if ctx.Err() != nil {
			if err := o.Checkpoint(); err != nil {
				return fmt.Errorf("train: interrupted, and the checkpoint failed: %w", err)
			}
			return ErrInterrupted
		}
		msg := ""
		if o.dyn != nil && o.step%c.RolloutEvery == 0 {
			var err error
			if msg, err = o.rolloutRound(); err != nil {
				return err
			}
		}
		if err := o.update(); err != nil {
			return err
		}
		o.step++
		if o.step%c.StepsPerEpoch == 0 || o.step == total {
			m, err := o.evaluate()
			if err != nil {
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

func (o *Offline) status(msg string) {
	if o.onStatus == nil {
		return
	}
	loss := math.NaN()
	if o.lastFit.Epochs > 0 {
		loss = o.lastFit.HoldoutLoss
	}
	o.onStatus(Status{Step: o.step, Steps: o.Cfg.TotalSteps(), LastEval: o.lastScore, ModelLoss: loss,
		RolloutLen: o.Cfg.Horizon, Message: msg})
}

// fit trains the dynamics model once on the whole data set.
func (o *Offline) fit() (string, error) {
	t0 := time.Now()
	rep, err := o.dyn.Fit(o.real, o.rng)
	if err != nil {
		return "", fmt.Errorf("train: model fit: %w", err)
	}
	o.lastFit, o.fitted = rep, true
	return fmt.Sprintf("model fit: %d epochs, holdout MSE %.5f, per k %s (%.1fs)", rep.Epochs, rep.HoldoutLoss,
		fmtFloats(rep.HoldoutPerK), time.Since(t0).Seconds()), nil
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
// buffer (which keeps the last ModelRetain roll-outs).
func (o *Offline) rolloutRound() (string, error) {
	t0 := time.Now()
	tr, err := o.rollout()
	if err != nil {
		return "", err
	}
	if o.model == nil {
		if o.model, err = NewReplay(o.task.ObsDim, o.task.ActDim, o.Cfg.ModelBufferSize(), 0); err != nil {
			return "", err
		}
		o.model.rng = rand.New(o.srcs.model)
	}
	if err := o.model.AddTransitions(tr); err != nil {
		return "", err
	}
	o.lastRoll = rollStats(tr, o.Cfg.Penalty)
	o.lastRoll.Seconds = time.Since(t0).Seconds()
	r := o.lastRoll
	return fmt.Sprintf("update %d: roll-out %d x H=%d -> %d transitions, reward %.3f, U %.4f (max %.3f), penalty %.4f, done %.3f (%.1fs)",
		o.step, o.Cfg.RolloutBatch, o.Cfg.Horizon, r.Transitions, r.RewardMean, r.UMean, r.UMax, r.PenaltyMean, r.DoneFrac, r.Seconds), nil
}

// rollout exports the policy and the model and runs one penalised roll-out.
func (o *Offline) rollout() (*infer.Transitions, error) {
	opts := infer.Options{Provider: o.Cfg.Provider, Threads: o.Cfg.Threads}
	roller, err := o.dyn.Roller(opts)
	if err != nil {
		return nil, err
	}
	defer roller.Close()
	b, err := o.actorONNX()
	if err != nil {
		return nil, err
	}
	pol, err := infer.OpenPolicy(b, opts)
	if err != nil {
		return nil, err
	}
	defer pol.Close()
	starts, err := o.real.SampleStarts(o.Cfg.RolloutBatch, o.dyn.M(), o.rng)
	if err != nil {
		return nil, err
	}
	tr, err := roller.Rollout(pol, starts, infer.RollConfig{Horizon: o.Cfg.Horizon, Penalty: float32(o.Cfg.Penalty),
		WantU: true, Done: o.task.Done}, o.rng)
	if err != nil {
		return nil, fmt.Errorf("train: roll-out at update %d: %w", o.step, err)
	}
	return tr, nil
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
		loss, err := o.bc.Update(o.batch)
		if err != nil {
			return err
		}
		o.lastBC = loss
		return nil
	}
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

// fillBatch samples round(RealRatio·Batch) data set rows and the rest from
// the model buffer (all data set rows while the model buffer is empty).
func (o *Offline) fillBatch() error {
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

// evaluate runs EvalEpisodes deterministic episodes with fixed seeds and
// logs their D4RL normalised score and raw return.
func (o *Offline) evaluate() (string, error) {
	rets := make([]float64, o.Cfg.EvalEpisodes)
	act := make([]float64, o.task.ActDim)
	for ep := range rets {
		obs := f32(o.eval.Reset(o.Cfg.Seed*1000003 + int64(1000*o.evals+ep)))
		for {
			a, err := o.sac.Act(obs, true, nil)
			if err != nil {
				return "", err
			}
			for i, v := range a {
				act[i] = float64(v)
			}
			st, err := o.eval.Step(act)
			if err != nil {
				return "", err
			}
			rets[ep] += st.Reward
			if st.Terminated || st.Truncated {
				break
			}
			obs = f32(st.Obs)
		}
	}
	o.evals++
	scores := make([]float64, len(rets))
	for i, r := range rets {
		s, err := datasets.NormalizedScore(o.Cfg.Env, r)
		if err != nil {
			s = math.NaN() // a task without D4RL reference scores
		}
		scores[i] = s
	}
	rm, rs := meanStd(rets)
	sm, ss := meanStd(scores)
	o.lastScore = sm
	if math.IsNaN(sm) {
		o.lastScore = rm
	}
	if err := o.log(sm, ss, rm, rs); err != nil {
		return "", err
	}
	return fmt.Sprintf("epoch %d (update %d): normalised score %.1f ± %.1f, return %.1f ± %.1f",
		o.step/o.Cfg.StepsPerEpoch, o.step, sm, ss, rm, rs), nil
}

func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

// log writes a progress row (the normalised score as eval_return_mean, or
// the raw return for tasks without D4RL scores) and an offline.csv row.
func (o *Offline) log(scoreMean, scoreStd, retMean, retStd float64) error {
	wall := o.wallBefore + time.Since(o.started).Seconds()
	em, es := scoreMean, scoreStd
	if math.IsNaN(em) {
		em, es = retMean, retStd
	}
	r := Record{Step: o.step, Wall: wall, EvalMean: em, EvalStd: es, TrainReturn: math.NaN(),
		ModelTrainLoss: math.NaN(), ModelHoldoutLoss: math.NaN(), RolloutLen: o.Cfg.Horizon,
		Alpha: math.NaN(), CriticLoss: math.NaN(), ActorLoss: math.NaN()}
	if o.dyn == nil {
		r.RolloutLen = 0
	}
	if o.lastFit.Epochs > 0 {
		r.ModelTrainLoss, r.ModelHoldoutLoss, r.ModelHoldoutPerK = o.lastFit.TrainLoss, o.lastFit.HoldoutLoss, o.lastFit.HoldoutPerK
	}
	if o.model != nil {
		r.ModelBuffer = o.model.Len()
	}
	q := math.NaN()
	if o.bc != nil {
		r.ActorLoss = o.lastBC
	} else if o.sac.Updates > 0 {
		r.Alpha, r.CriticLoss, r.ActorLoss = o.lastSAC.Alpha, o.lastSAC.CriticLoss, o.lastSAC.ActorLoss
		q = o.lastSAC.Q1
	}
	if err := o.progress.Log(r); err != nil {
		return err
	}
	return o.olog.log(OfflineRecord{Step: o.step, Epoch: o.step / o.Cfg.StepsPerEpoch, Wall: wall,
		ScoreMean: scoreMean, ScoreStd: scoreStd, ReturnMean: retMean, ReturnStd: retStd, Roll: o.lastRoll,
		QMean: q, BCLoss: o.lastBC})
}

func (o *Offline) actorONNX() ([]byte, error) {
	return onnx.ExportActor(o.sac.Actor, map[string]string{"task": o.Cfg.Env, "algo": o.Cfg.Algo + "-offline",
		"dataset": o.Cfg.Name, "update": strconv.Itoa(o.step)})
}

// exportFinal writes the final policy (and model) as ONNX files in the run
// directory.
func (o *Offline) exportFinal() error {
	b, err := o.actorONNX()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Dir, "policy.onnx"), b, 0o644); err != nil {
		return err
	}
	if o.dyn != nil && o.fitted {
		b, err := o.dyn.ExportONNX()
		if err != nil {
			return err
		}
		name := "adm.onnx"
		if o.Cfg.Algo == "mopo" {
			name = "ensemble.onnx"
		}
		return atomicfile.WriteFile(filepath.Join(o.Dir, name), b, 0o644)
	}
	return nil
}
