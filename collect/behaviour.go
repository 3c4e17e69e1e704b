package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// BehaviourConfig is the SAC training run that makes the behaviour policies
// of the medium, expert and medium-replay data sets.
type BehaviourConfig struct {
	Env          string
	Seed         int64
	Steps        int     // env steps at most
	WarmUp       int     // uniform random steps first
	EvalEvery    int     // env steps between evaluations (and snapshots)
	EvalEpisodes int     // deterministic episodes per evaluation
	StopReturn   float64 // stop once an evaluation reaches this return (0: run all Steps)
	Hidden       []int
}

// DefaultBehaviourConfig is SAC with one update per env step (lr 3e-4,
// batch 256, 256x256, auto entropy), 5000 warm-up steps and a snapshot every
// 5000 steps.
func DefaultBehaviourConfig(env string, seed int64, steps int) BehaviourConfig {
	return BehaviourConfig{Env: env, Seed: seed, Steps: steps, WarmUp: 5000, EvalEvery: 5000, EvalEpisodes: 5,
		Hidden: []int{256, 256}}
}

// Snapshot is one saved policy of a behaviour run.
type Snapshot struct {
	Step       int     `json:"env_step"`
	EvalReturn float64 `json:"eval_return"` // mean deterministic return at that step
	File       string  `json:"file"`        // ONNX actor, relative to the run directory
}

// BehaviourLog is a behaviour run's snapshots.json.
type BehaviourLog struct {
	Env       string     `json:"env"`
	Seed      int64      `json:"seed"`
	Done      bool       `json:"done"`
	Reason    string     `json:"reason,omitempty"`
	Snapshots []Snapshot `json:"snapshots"`
}

// ReadBehaviourLog reads DIR/snapshots.json.
func ReadBehaviourLog(dir string) (*BehaviourLog, error) {
	b, err := os.ReadFile(filepath.Join(dir, rundir.SnapshotsFile))
	if err != nil {
		return nil, fmt.Errorf("collect: %s is not a behaviour run: %w", dir, err)
	}
	var l BehaviourLog
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("collect: %s/%s: %w", dir, rundir.SnapshotsFile, err)
	}
	return &l, nil
}

func (l *BehaviourLog) write(dir string) error {
	b, _ := json.MarshalIndent(l, "", "  ")
	return atomicfile.WriteFile(filepath.Join(dir, rundir.SnapshotsFile), append(b, '\n'), 0o644)
}

// Best returns the snapshot with the highest evaluation return (the later
// one on ties): the expert.
func (l *BehaviourLog) Best() (Snapshot, error) {
	if len(l.Snapshots) == 0 {
		return Snapshot{}, errors.New("collect: the behaviour run has no snapshots")
	}
	best := l.Snapshots[0]
	for _, s := range l.Snapshots[1:] {
		if s.EvalReturn >= best.EvalReturn {
			best = s
		}
	}
	return best, nil
}

// Medium returns the earliest snapshot whose return is closest to target
// (D4RL's medium: about a third of the expert's return).
func (l *BehaviourLog) Medium(target float64) (Snapshot, error) {
	if len(l.Snapshots) == 0 {
		return Snapshot{}, errors.New("collect: the behaviour run has no snapshots")
	}
	best := l.Snapshots[0]
	for _, s := range l.Snapshots[1:] {
		if math.Abs(s.EvalReturn-target) < math.Abs(best.EvalReturn-target) {
			best = s
		}
	}
	return best, nil
}

// Finished reports whether a done run has nothing left to do for bc: it
// stopped at bc's stop return, or its budget was used and bc asks for no
// more env steps. A done run that used its budget below the stop return
// continues when bc.Steps is larger (TrainBehaviour extends it).
func (l *BehaviourLog) Finished(bc BehaviourConfig) bool {
	if !l.Done || len(l.Snapshots) == 0 {
		return l.Done
	}
	last := l.Snapshots[len(l.Snapshots)-1]
	return (bc.StopReturn > 0 && last.EvalReturn >= bc.StopReturn) || last.Step >= bc.Steps
}

// TrainBehaviour runs (or resumes, or just reopens when finished) a SAC run
// in dir that saves its deterministic actor as an ONNX snapshot after every
// evaluation. It is an `admpo train online --algo sac` run directory
// (config.json, progress logs, checkpoint, policy.onnx) plus snapshots/ and
// snapshots.json. ctx cancellation writes a checkpoint and returns
// train.ErrInterrupted; calling again resumes. A run that used its whole
// budget without reaching bc.StopReturn is extended to bc.Steps when that is
// larger (see BehaviourLog.Finished); its config.json records the new length.
func TrainBehaviour(ctx context.Context, bc BehaviourConfig, dir string, onStatus func(train.Status)) (*BehaviourLog, error) {
	if l, err := ReadBehaviourLog(dir); err == nil && l.Finished(bc) {
		return l, nil
	}
	var o *train.Online
	var err error
	log := &BehaviourLog{Env: bc.Env, Seed: bc.Seed}
	if _, serr := os.Stat(rundir.Dir(dir).Checkpoint()); serr == nil {
		if o, err = train.ResumeOnline(dir); err != nil {
			return nil, err
		}
		if bc.Steps > o.Cfg.Steps {
			if err := o.SetSteps(bc.Steps); err != nil {
				o.Close()
				return nil, fmt.Errorf("collect: extending the behaviour run in %s: %w", dir, err)
			}
		}
		if l, err := ReadBehaviourLog(dir); err == nil {
			for _, s := range l.Snapshots {
				if s.Step <= o.Step() {
					log.Snapshots = append(log.Snapshots, s)
				}
			}
		}
	} else {
		cfg, err := train.Preset("paper", bc.Env, "sac", 1)
		if err != nil {
			return nil, err
		}
		// A version 1 config: bc.Steps counts the warm-up, the target
		// entropy -ActDim is SAC's usual one on the squashed action in
		// [-1,1] (not ADMPO-ON's per-task value), alpha starts at 0.2 and the
		// actor updates every step: behaviour runs mean what they meant
		// before the fidelity change.
		cfg.Version, cfg.Alpha, cfg.AutoAlpha, cfg.ActorEvery = 1, 0.2, true, 1
		cfg.Seed, cfg.Steps, cfg.WarmUp, cfg.UpdatesPerStep = bc.Seed, bc.Steps, bc.WarmUp, 1
		cfg.EvalEvery, cfg.EvalEpisodes, cfg.CheckpointEvery, cfg.Hidden = bc.EvalEvery, bc.EvalEpisodes, bc.EvalEvery, bc.Hidden
		if task, err := envs.Lookup(bc.Env); err == nil {
			cfg.TargetEntropy = -float64(task.ActDim)
		}
		if o, err = train.NewOnline(cfg, dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(rundir.Dir(dir).Path(rundir.SnapshotsDir), 0o755); err != nil {
			o.Close()
			return nil, fmt.Errorf("collect: %w", err)
		}
	}
	defer o.Close()
	o.OnStatus(onStatus)
	every := o.Cfg.EvalEvery
	resumedAt := -1
	if n := len(log.Snapshots); o.Step() > 0 && o.Step()%every == 0 && (n == 0 || log.Snapshots[n-1].Step < o.Step()) {
		resumedAt = o.Step() // killed between the checkpoint and the snapshot
	}
	total := o.Cfg.TotalSteps()
	for o.Step() < total || resumedAt >= 0 {
		if resumedAt < 0 {
			next := min(total, (o.Step()/every+1)*every)
			if err := o.RunTo(ctx, next); err != nil {
				return nil, err
			}
		}
		resumedAt = -1
		b, err := o.ActorONNX()
		if err != nil {
			return nil, err
		}
		name := filepath.Join(rundir.SnapshotsDir, fmt.Sprintf("policy-%07d.onnx", o.Step()))
		if err := atomicfile.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
		log.Snapshots = append(log.Snapshots, Snapshot{Step: o.Step(), EvalReturn: o.LastEval(), File: name})
		if bc.StopReturn > 0 && o.LastEval() >= bc.StopReturn {
			log.Reason = fmt.Sprintf("evaluation return %.1f reached the stop return %.1f at env step %d", o.LastEval(), bc.StopReturn, o.Step())
			break
		}
		if err := log.write(dir); err != nil {
			return nil, err
		}
	}
	if log.Reason == "" {
		log.Reason = fmt.Sprintf("env step budget %d used", total)
	}
	if err := o.Checkpoint(); err != nil {
		return nil, err
	}
	if err := o.ExportFinal(); err != nil {
		return nil, err
	}
	log.Done = true
	return log, log.write(dir)
}
