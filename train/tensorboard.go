package train

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/internal/tbevent"
)

// The run directory also gets TensorBoard event files (on by default): one
// event per progress row, at the row's step (env step online, policy update
// offline), with the row's measured scalars. Each process start writes a
// new events.out.tfevents.* file; a resumed run first drops the events
// after its checkpoint's step from the earlier files, so no step is logged
// twice.

// tbLog writes a run's scalars to a TensorBoard event file in dir, opened
// at the first event.
type tbLog struct {
	dir      string
	off      bool
	w        *tbevent.Writer
	lastStep int     // step and training time of the last event (or the
	lastWall float64 // resume), for the steps-per-second rate
}

// SetTensorBoard turns the run's TensorBoard event file on (the default)
// or off; call it before Run.
func (l *loop) SetTensorBoard(on bool) { l.tb.off = !on }

// openTB prepares the TensorBoard log of the run in dir at the loop's step:
// for a resumed run (keepUpTo >= 0) the existing event files lose the
// events after step keepUpTo.
func (l *loop) openTB(dir string, keepUpTo int) error {
	l.tb.dir = dir
	l.tb.lastStep, l.tb.lastWall = max(keepUpTo, 0), l.wallBefore
	if keepUpTo >= 0 {
		if _, err := tbevent.TrimDir(dir, int64(keepUpTo)); err != nil {
			return fmt.Errorf("train: tensorboard: %w", err)
		}
	}
	return nil
}

// scalarList collects the finite values of a TensorBoard event.
type scalarList []tbevent.Scalar

// add appends tag = v unless v is NaN or infinite (not measured).
func (s *scalarList) add(tag string, v float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		*s = append(*s, tbevent.Scalar{Tag: tag, Value: float32(v)})
	}
}

// progressScalars are the TensorBoard scalars of a progress row; evalTag
// names its evaluation value (eval/return online, eval/normalized_score
// offline).
func progressScalars(r Record, evalTag string, withModel bool) scalarList {
	var s scalarList
	s.add(evalTag+"_mean", r.EvalMean)
	s.add(evalTag+"_std", r.EvalStd)
	s.add("train/episode_return", r.TrainReturn)
	s.add("sac/alpha", r.Alpha)
	s.add("sac/critic_loss", r.CriticLoss)
	s.add("sac/actor_loss", r.ActorLoss)
	if withModel {
		s.add("model/train_loss", r.ModelTrainLoss)
		s.add("model/holdout_mse", r.ModelHoldoutLoss)
		for k, v := range r.ModelHoldoutPerK {
			s.add(fmt.Sprintf("model/holdout_mse_k%d", k+1), v)
		}
		s.add("rollout/length", float64(r.RolloutLen))
		s.add("rollout/model_buffer", float64(r.ModelBuffer))
	}
	return s
}

// logTB writes one event at r's step with s and the steps per second of
// training time since the last event; nothing when TensorBoard is off.
func (l *loop) logTB(r Record, s scalarList) error {
	t := &l.tb
	if t.off {
		return nil
	}
	if r.Step > t.lastStep && r.Wall > t.lastWall {
		s.add("perf/steps_per_second", float64(r.Step-t.lastStep)/(r.Wall-t.lastWall))
	}
	t.lastStep, t.lastWall = r.Step, r.Wall
	if t.w == nil {
		w, err := tbevent.Create(t.dir)
		if err != nil {
			return fmt.Errorf("train: tensorboard: %w", err)
		}
		t.w = w
	}
	if err := t.w.Scalars(int64(r.Step), s); err != nil {
		return fmt.Errorf("train: tensorboard: %w", err)
	}
	return nil
}

// closeTB closes the event file.
func (l *loop) closeTB() {
	if l.tb.w != nil {
		l.tb.w.Close()
		l.tb.w = nil
	}
}
