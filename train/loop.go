package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/rng"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// loop is the state and the steps that the online loop (Online) and the
// offline loop (Offline) share: the evaluation simulator, SAC, the real (or
// data set) and model buffers, the dynamics model, the random sources, the
// counters and the progress log. Both embed it.
type loop struct {
	task *envs.Task
	eval *envs.Env // deterministic evaluation episodes
	sac  *sac.Agent
	dev  *devLearner // runs sac's updates on a device; nil on the CPU
	// rollDev is the roll-out device the loop opened (RolloutDevice other
	// than the learner's); nil when none or shared with dev.
	rollDev device.Device
	real    *buffer.Replay
	model   *buffer.Replay // nil before the first roll-out and without a model
	dyn     dynamics.Model
	rng     *rand.Rand
	srcs    rngSources

	step       int
	lastFit    dynamics.FitReport
	fitAt      int // env step of the last completed model fit (0: none yet)
	evals      int
	wallBefore float64 // seconds spent before a resume
	time       Timing  // cumulative time by phase, resumes included
	started    time.Time
	progress   *Progress
	tb         tbLog // TensorBoard event file
	batch      *buffer.Batch
	onStatus   func(Status)

	// lastSAC is SAC's last update's stats as of the last read (sacStats);
	// sacUnread says that updates ran since, actorSince that one of them
	// stepped the actor.
	lastSAC               sac.Stats
	sacUnread, actorSince bool

	// realFloor takes floor(realRatio·Batch) real rows as the authors'
	// int(batch_size*real_ratio) (version 2 configs); else the nearest
	// integer.
	realFloor bool

	// rollNote is a remark for the next roll-out's log line (rolloutNote);
	// bindingNoted says that the engine's binding fallback was remarked.
	rollNote     string
	bindingNoted bool

	// diag is what RolloutActorWith asks of the roll-out it makes (zero
	// otherwise: training's roll-outs never set it).
	diag RolloutOptions
}

// RolloutOptions are the extras of a diagnosis's roll-out
// (Online.RolloutActorWith, Offline.RolloutActorWith); the zero value is the
// roll-out training makes.
type RolloutOptions struct {
	// Mean fills the transitions' MeanNextObs with the model's mean next
	// observations (infer.RollConfig.WantMean); the roll-out is otherwise
	// unchanged.
	Mean bool
	// NoDropout rolls an ADM out without MC dropout even when the run's
	// roll-outs use it (rollout_dropout); for a model without dropout it
	// changes nothing.
	NoDropout bool
}

// diagnosing runs f, a diagnosis's roll-out, with the loop's random source
// seeded seed and its roll-outs extended by opt, then restores both: the
// run's own random sources and roll-outs are left as they were.
func (l *loop) diagnosing(seed int64, opt RolloutOptions, f func() (*infer.Transitions, error)) (*infer.Transitions, error) {
	own := l.rng
	l.rng, l.diag = rand.New(rand.NewSource(seed)), opt
	defer func() { l.rng, l.diag = own, RolloutOptions{} }()
	return f()
}

// RolloutDropout reports whether the run's roll-outs draw MC dropout masks:
// an ADM run with rollout_dropout (see RolloutOptions.NoDropout).
func (l *loop) RolloutDropout() bool {
	a, ok := l.dyn.(*dynamics.ADM)
	return ok && a.RolloutDropout > 0
}

// runLoop is what a fresh or resumed run finishes the same way.
type runLoop interface {
	Step() int
	Close()
	// openLogs opens the run's logs: fresh ones (keepUpTo < 0) or the
	// existing ones cut after env step / update keepUpTo.
	openLogs(keepUpTo int) error
	// restore takes the run state from a checkpoint.
	restore(f *ckpt.File) error
	// RunTo runs the loop until step stop (or ctx is cancelled).
	RunTo(ctx context.Context, stop int) error
	// ExportFinal writes the final policy (and model) as ONNX files.
	ExportFinal() error
}

// runToEnd runs r until its last step, total (or ctx is cancelled:
// ErrInterrupted, after a checkpoint), then writes its final ONNX files.
func runToEnd(ctx context.Context, r runLoop, total int) error {
	if err := r.RunTo(ctx, total); err != nil {
		return err
	}
	return r.ExportFinal()
}

// prepareRunDir creates dir for a fresh run; it must not already hold one.
func prepareRunDir(dir string) error {
	if rundir.Dir(dir).HasRun() {
		return fmt.Errorf("train: %s already holds a run: use --resume %s, or another --out", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// startRun writes a fresh run's config.json and opens its logs, closing r
// on failure.
func startRun(r runLoop, dir string, config []byte) error {
	if err := atomicfile.WriteFile(rundir.Dir(dir).Config(), config, 0o644); err != nil {
		r.Close()
		return err
	}
	if err := r.openLogs(-1); err != nil {
		r.Close()
		return err
	}
	return nil
}

// resumeRun restores r from its run directory's checkpoint f and reopens
// its logs at the checkpoint's step, closing r on failure.
func resumeRun(r runLoop, dir string, f *ckpt.File) error {
	if err := r.restore(f); err != nil {
		r.Close()
		return fmt.Errorf("train: resuming %s: %w", dir, err)
	}
	if err := r.openLogs(r.Step()); err != nil {
		r.Close()
		return err
	}
	return nil
}

// initParts seeds the loop's random sources from seed, sizes its policy
// batch and builds the dynamics model algo names: the ADM for "admpo", the
// ensemble for ensembleAlgo (MBPO's online, MOPO's offline), none otherwise.
// Config version 2 on keeps a floor of real rows in every batch.
func (l *loop) initParts(seed int64, version, batch, od, ad int, algo, ensembleAlgo string, dc dynamics.Config) error {
	l.seedRNGs(seed)
	l.realFloor = version >= 2
	l.batch = buffer.NewBatch(batch, od, ad)
	var err error
	switch algo {
	case "admpo":
		l.dyn, err = dynamics.NewADM(dc, od, ad)
	case ensembleAlgo:
		l.dyn, err = dynamics.NewEnsemble(dc, od, ad)
	}
	return err
}

// seedRNGs gives the loop, the buffers and SAC serialisable sources seeded
// base+2 .. base+5.
func (l *loop) seedRNGs(base int64) {
	l.rng, l.srcs.loop = rng.New(base + 2)
	var realRNG *rand.Rand
	realRNG, l.srcs.real = rng.New(base + 3)
	l.real.SetRand(realRNG)
	var sacRNG *rand.Rand
	sacRNG, l.srcs.sac = rng.New(base + 4)
	l.sac.SetRand(sacRNG)
	l.srcs.model = rng.NewSource(base + 5)
}

// stopIfCancelled writes a checkpoint and returns ErrInterrupted once ctx
// is cancelled; nil while it is not.
func stopIfCancelled(ctx context.Context, checkpoint func() error) error {
	if ctx.Err() == nil {
		return nil
	}
	if err := checkpoint(); err != nil {
		return fmt.Errorf("train: interrupted, and the checkpoint failed: %w", err)
	}
	return ErrInterrupted
}

// interruptibleRound runs round (a model fit and/or roll-out, which may take
// minutes) and returns its status message, so that an interrupt during it costs seconds and keeps resume
// exact: when ctx is cancelled while round runs, what a round changes before
// it completes (the dynamics model, the random sources, the last fit) is put
// back as it was, the checkpoint is written (stopIfCancelled) and
// ErrInterrupted returned. A resumed run then redoes the whole round from the
// same state, as if never stopped (the offline model fit instead keeps the
// fit's snapshot for the checkpoint and continues from it: Offline.fit). A
// round must change nothing else until its last step can no longer fail
// (the model buffer is filled last).
func (l *loop) interruptibleRound(ctx context.Context, checkpoint func() error,
	round func(context.Context) (string, error)) (string, error) {
	before := ckpt.New()
	if err := l.dyn.Save(before); err != nil {
		return "", err
	}
	if err := l.saveRNGs(before); err != nil {
		return "", err
	}
	// Save keeps references to the live weights: encode them now.
	saved, lastFit, fitAt := before.Encode(), l.lastFit, l.fitAt
	msg, err := round(ctx)
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return msg, err
	}
	f, derr := ckpt.Decode(saved)
	if derr == nil {
		derr = l.dyn.Load(f)
	}
	if derr == nil {
		derr = l.loadRNGs(f)
	}
	if derr != nil {
		return "", fmt.Errorf("train: interrupted in a model round, and restoring the state before it failed (no checkpoint written): %w", derr)
	}
	l.lastFit, l.fitAt = lastFit, fitAt
	return "", stopIfCancelled(ctx, checkpoint)
}

// timed runs f and adds its duration to *acc.
func timed(acc *float64, f func() error) error {
	t0 := time.Now()
	err := f()
	*acc += time.Since(t0).Seconds()
	return err
}

// report passes the loop's state to the OnStatus callback, if one is set.
func (l *loop) report(steps int, lastEval float64, rolloutLen int, msg string) {
	if l.onStatus == nil {
		return
	}
	loss := math.NaN()
	if l.lastFit.Epochs > 0 {
		loss = l.lastFit.HoldoutLoss
	}
	l.onStatus(Status{Step: l.step, Steps: steps, LastEval: lastEval, ModelLoss: loss, RolloutLen: rolloutLen, Message: msg})
}

// sacUpdate is one SAC update on a real/model mixture (see mixBatch). It
// reads no losses: sacStats does, when the loop reports them.
func (l *loop) sacUpdate(realRatio float64) error {
	if err := l.mixBatch(realRatio); err != nil {
		return err
	}
	actor, err := l.sac.Update(l.batch)
	if err != nil {
		return err
	}
	l.sacUnread = true
	l.actorSince = l.actorSince || actor
	return nil
}

// sacStats returns SAC's last update's stats, with the last actor step's
// numbers after an update that skipped the actor, for a progress row,
// TensorBoard, offline.csv or a checkpoint. With a device learner the first
// call after updates reads them back (one device synchronisation; see
// sac.Agent.LastStats), later ones reuse that copy: updates between two
// reports never wait for the device. The values are those the loop got
// when it read every update's stats. No check runs on the losses per update
// (the loop has none); one added later must run here, at the reports.
func (l *loop) sacStats() (sac.Stats, error) {
	if !l.sacUnread {
		return l.lastSAC, nil
	}
	st, err := l.sac.LastStats()
	if err != nil {
		return l.lastSAC, err
	}
	if !l.actorSince { // no actor step since the last read (or the checkpoint's)
		st.ActorLoss, st.AlphaLoss, st.LogPi, st.ActorLR = l.lastSAC.ActorLoss, l.lastSAC.AlphaLoss, l.lastSAC.LogPi, l.lastSAC.ActorLR
	}
	l.lastSAC, l.sacUnread, l.actorSince = st, false, false
	return st, nil
}

// mixBatch samples realRows(realRatio) real rows and the rest from the
// model buffer (all real while the model buffer is empty or absent).
func (l *loop) mixBatch(realRatio float64) error {
	b := l.batch
	nReal := b.N
	if l.model != nil && l.model.Len() > 0 {
		nReal = realRows(realRatio, b.N, l.realFloor)
	}
	if err := l.real.SampleRows(b, 0, nReal); err != nil {
		return err
	}
	if nReal < b.N {
		return l.model.SampleRows(b, nReal, b.N-nReal)
	}
	return nil
}

// realRows is the number of real rows in a batch of n: floor(ratio·n) as
// the authors' int(batch_size*real_ratio) when floor, else the nearest
// integer (version 1 runs).
func realRows(ratio float64, n int, floor bool) int {
	if floor {
		return int(ratio * float64(n))
	}
	return int(math.Round(ratio * float64(n)))
}

// rollPolicy opens the model's roll-out engine and the exported actor on
// ONNX Runtime and rolls the policy out from n start sequences drawn from
// starts (the run's real buffer, or another run's: a diagnosis); where
// ("step 5000", "update 1000") places a roll-out error. With full, starts
// are drawn by the authors' rule (SampleFullStarts), else from any stored
// state (SampleStarts). An ADM on a roll-out device rolls out there when
// the actor is the run's SAC actor (own: its host weights are set before
// the roll-out); another actor, known only as ONNX, rolls out on ONNX
// Runtime.
func (l *loop) rollPolicy(actor []byte, own bool, opts infer.Options, starts *buffer.Replay, n int, rc infer.RollConfig, where string, full bool) (*infer.Transitions, error) {
	dyn := l.dyn
	if a, ok := dyn.(*dynamics.ADM); ok && l.diag.NoDropout && a.RolloutDropout > 0 {
		c := *a // the same weights, exported without dropout
		c.RolloutDropout = 0
		dyn = &c
	}
	rc.WantMean = rc.WantMean || l.diag.Mean
	roller, err := l.roller(dyn, opts, own)
	if err != nil {
		return nil, err
	}
	defer roller.Close()
	rc = l.deviceDone(roller, rc)
	if b, ok := roller.(interface{ BindingError() error }); ok && b.BindingError() != nil && !l.bindingNoted {
		l.bindingNoted = true
		l.rollNote = fmt.Sprintf("; roll-out state copied through host memory each step, not bound to the provider's memory: %v", b.BindingError())
	}
	pol, err := infer.OpenPolicy(actor, opts)
	if err != nil {
		return nil, err
	}
	defer pol.Close()
	sample := starts.SampleStarts
	if full {
		sample = starts.SampleFullStarts
	}
	st, err := sample(n, l.dyn.M(), l.rng)
	if err != nil {
		return nil, err
	}
	tr, err := roller.Rollout(pol, st, rc, l.rng)
	if err != nil {
		return nil, fmt.Errorf("train: roll-out at %s: %w", where, err)
	}
	return tr, nil
}

// deviceDone moves a device roll-out's termination onto the device: for
// a device roller (dynamics.DevRoller) and a task whose rule is data
// (l.task.DoneSpec, which envs holds equal to its Done; nil for a learned
// rule or none), rc takes the spec in place of the host Done func. Other
// rollers get rc unchanged.
func (l *loop) deviceDone(r infer.Roller, rc infer.RollConfig) infer.RollConfig {
	if _, dev := r.(*dynamics.DevRoller); dev && l.task != nil && l.task.DoneSpec != nil && rc.DoneSpec == nil {
		rc.Done, rc.DoneSpec = nil, l.task.DoneSpec
	}
	return rc
}

// roller opens dyn's roll-out engine: a device roller with the run's SAC
// actor set when own, ONNX Runtime's otherwise.
func (l *loop) roller(dyn dynamics.Model, opts infer.Options, own bool) (infer.Roller, error) {
	a, ok := dyn.(*dynamics.ADM)
	if !ok || a.Dev == nil {
		return dyn.Roller(opts)
	}
	if !own {
		return a.ORTRoller(opts)
	}
	host, err := l.sac.HostActor()
	if err != nil {
		return nil, err
	}
	r, err := a.Roller(opts)
	if err != nil {
		return nil, err
	}
	s, ok := r.(dynamics.ActorSetter)
	if !ok {
		r.Close()
		return nil, fmt.Errorf("train: the ADM's device roller %T takes no actor", r)
	}
	if err := s.SetActor(host); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// rolloutNote returns the remark for a roll-out's log line, once.
func (l *loop) rolloutNote() string {
	n := l.rollNote
	l.rollNote = ""
	return n
}

// addModel adds roll-out transitions to the model buffer, which it first
// creates (drawing from the model source) or resizes to capacity.
func (l *loop) addModel(tr *infer.Transitions, capacity int) error {
	var err error
	if l.model == nil {
		if l.model, err = buffer.New(l.task.ObsDim, l.task.ActDim, capacity, 0); err != nil {
			return err
		}
		l.model.SetRand(rand.New(l.srcs.model))
	} else if l.model, err = l.model.Resized(capacity); err != nil {
		return err
	}
	return l.model.AddTransitions(tr)
}

// evalReturns runs episodes deterministic episodes of the current policy
// with fixed seeds (evaluation number and episode) and returns their
// returns.
func (l *loop) evalReturns(seed int64, episodes int) ([]float64, error) {
	r, err := envs.Evaluate(l.eval, sacActor{s: l.sac, deterministic: true}, envs.EvalConfig{Episodes: episodes,
		Seed: func(ep int) int64 { return seed*1000003 + int64(1000*l.evals+ep) }})
	if err != nil {
		return nil, fmt.Errorf("train: evaluation: %w", err)
	}
	l.evals++
	return r.Returns, nil
}

// sacActor is SAC's actor as an envs.Actor: its mean action when
// deterministic, else a sample with noise from rng.
type sacActor struct {
	s             *sac.Agent
	deterministic bool
}

// Act runs the actor on one observation.
func (a sacActor) Act(obs []float32, rng *rand.Rand, act []float64) error {
	out, err := a.s.Act(obs, a.deterministic, rng)
	if err != nil {
		return err
	}
	for i, v := range out {
		act[i] = float64(v)
	}
	return nil
}

// wall is the run's training time in seconds, resumes included.
func (l *loop) wall() float64 {
	if l.started.IsZero() {
		return l.wallBefore
	}
	return l.wallBefore + time.Since(l.started).Seconds()
}

// record is a progress row for an evaluation, with the model and SAC
// columns filled in once measured (NaN before) and no training return; it
// reads SAC's stats (sacStats).
func (l *loop) record(evalMean, evalStd float64, rolloutLen int) (Record, error) {
	r := Record{Step: l.step, Wall: l.wall(), Time: l.time, EvalMean: evalMean, EvalStd: evalStd, TrainReturn: math.NaN(),
		ModelTrainLoss: math.NaN(), ModelHoldoutLoss: math.NaN(), RolloutLen: rolloutLen,
		Alpha: math.NaN(), CriticLoss: math.NaN(), ActorLoss: math.NaN()}
	if l.lastFit.Epochs > 0 {
		r.ModelTrainLoss, r.ModelHoldoutLoss, r.ModelHoldoutPerK = l.lastFit.TrainLoss, l.lastFit.HoldoutLoss, l.lastFit.HoldoutPerK
	}
	if l.model != nil {
		r.ModelBuffer = l.model.Len()
	}
	if l.sac.Updates > 0 {
		st, err := l.sacStats()
		if err != nil {
			return r, err
		}
		r.Alpha, r.CriticLoss, r.ActorLoss = st.Alpha, st.CriticLoss, st.ActorLoss
	}
	return r, nil
}

// writeFinal writes the final policy (actor) and, when fitted, the model
// as ONNX files in the run directory dir: policy.onnx, adm.onnx or
// ensemble.onnx.
func (l *loop) writeFinal(dir string, actor []byte, fitted bool) error {
	if err := atomicfile.WriteFile(rundir.Dir(dir).Policy(), actor, 0o644); err != nil {
		return err
	}
	if l.dyn == nil || !fitted {
		return nil
	}
	b, err := l.dyn.ExportONNX()
	if err != nil {
		return err
	}
	name := rundir.ADMFile
	if _, ok := l.dyn.(*dynamics.Ensemble); ok {
		name = rundir.EnsembleFile
	}
	return atomicfile.WriteFile(rundir.Dir(dir).Path(name), b, 0o644)
}

// close frees the evaluation simulator, SAC's graphs and the logs.
func (l *loop) close() {
	if l.progress != nil {
		l.progress.Close()
	}
	l.closeTB()
	if l.sac != nil {
		l.sac.Close()
	}
	if a, ok := l.dyn.(*dynamics.ADM); ok { // its device roller before the device
		_ = a.Close()
	}
	_ = l.dev.Close()
	l.dev = nil
	if l.rollDev != nil {
		_ = l.rollDev.Close()
		l.rollDev = nil
	}
	if l.eval != nil {
		l.eval.Close()
	}
}
