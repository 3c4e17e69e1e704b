package train

import (
	"context"
	"errors"
	"math/rand"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
)

// tripCtx is a context whose Err turns to context.Canceled once armed and
// asked `after` more times: a cancel that lands at an exact point inside a
// model fit or roll-out, so the test is deterministic.
type tripCtx struct {
	context.Context
	armed       atomic.Bool
	left        atomic.Int64
	tripped     atomic.Bool
	errsAfterIt atomic.Int64 // Err calls that answered Canceled
}

func newTripCtx() *tripCtx { return &tripCtx{Context: context.Background()} }

func (c *tripCtx) arm(after int64) {
	c.left.Store(after)
	c.armed.Store(true)
}

func (c *tripCtx) Err() error {
	if c.tripped.Load() || c.armed.Load() && c.left.Add(-1) < 0 {
		c.tripped.Store(true)
		c.errsAfterIt.Add(1)
		return context.Canceled
	}
	return nil
}

// armingDynamics arms ctx when the round-th model fit starts (stage
// "fit": cancelled at the fit's second Adam step) or when that round's roll-out
// engine opens (stage "rollout": cancelled at the roll-out's first check).
type armingDynamics struct {
	dynamics.Model
	ctx          *tripCtx
	stage        string
	round, fits  int
	armedInStage bool
}

func (d *armingDynamics) Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (dynamics.FitReport, error) {
	d.fits++
	if d.fits == d.round && d.stage == "fit" {
		d.ctx.arm(1)
		d.armedInStage = true
	}
	return d.Model.Fit(ctx, real, maxSteps, rng)
}

// FitResumable arms ctx as Fit does, for models whose fit snapshots.
func (d *armingDynamics) FitResumable(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand, r *dynamics.FitResume) (dynamics.FitReport, error) {
	d.fits++
	if d.fits == d.round && d.stage == "fit" {
		d.ctx.arm(1)
		d.armedInStage = true
	}
	return d.Model.(dynamics.Resumable).FitResumable(ctx, real, maxSteps, rng, r)
}

func (d *armingDynamics) Roller(opts infer.Options) (infer.Roller, error) {
	if d.fits == d.round && d.stage == "rollout" && !d.armedInStage {
		d.ctx.arm(0)
		d.armedInStage = true
	}
	return d.Model.Roller(opts)
}

// base gives the interrupt tests the loop under an Online or Offline.
func (l *loop) base() *loop { return l }

// interrupted starts a run of cfg in a new directory with start (NewOnline,
// NewOffline), cancels it inside the stage ("fit", "rollout") of its
// round-th model round and checks that Run returns ErrInterrupted from
// there; it returns the directory and the step the run stopped at.
func interrupted[C any, R interface {
	Run(context.Context) error
	Step() int
	Close()
	base() *loop
}](t *testing.T, start func(C, string) (R, error), cfg C, stage string, round int) (dir string, stopped int) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "b")
	b, err := start(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := newTripCtx()
	d := &armingDynamics{Model: b.base().dyn, ctx: ctx, stage: stage, round: round}
	b.base().dyn = d
	if err := b.Run(ctx); !errors.Is(err, ErrInterrupted) || !d.armedInStage {
		t.Fatalf("Run: %v (armed %v), want ErrInterrupted inside the %s", err, d.armedInStage, stage)
	}
	return dir, b.Step()
}

// TestInterruptDuringModelRoundResumesExactly cancels an online run inside
// its second model round (during the fit, and during the roll-out): Run
// must return ErrInterrupted at once, with a checkpoint of the state before
// the round, and the resumed run must end bit-identical to an uninterrupted
// one (the round is redone from the same state).
func TestInterruptDuringModelRoundResumesExactly(t *testing.T) {
	for _, algo := range []string{"admpo", "mbpo"} {
		cfg := tinyConfig(algo)
		want := straightRun(t, cfg)
		for _, stage := range []string{"fit", "rollout"} {
			t.Run(algo+"/"+stage, func(t *testing.T) {
				dir, stopped := interrupted(t, NewOnline, cfg, stage, 2)
				second := cfg.WarmUp + cfg.ModelEvery // env step of the second round
				if stopped != second {
					t.Fatalf("stopped at env step %d, want inside the round at %d", stopped, second)
				}
				c := resumed(t, ResumeOnline, dir)
				firstRound := cfg.RolloutBatch * cfg.Rollout.At(0) // H = 1: one transition per start
				if c.step != second || c.model == nil || c.model.Len() != firstRound {
					t.Fatalf("resumed at step %d with %v model rows, want step %d and the first round's rows", c.step, c.model, second)
				}
				if err := c.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				sameRun(t, capture(c), want)
			})
		}
	}
}

// TestOfflineInterruptDuringFitResumesExactly cancels an offline ADMPO run
// inside its one model fit and inside a later roll-out round; the resumed
// run (which redoes the interrupted fit or round) must end identical to an
// uninterrupted one.
func TestOfflineInterruptDuringFitResumesExactly(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	cfg := Fixtures.TinyOfflineConfig(t, "admpo", "medium-replay", data)
	_, want := offStraightRun(t, cfg)
	for _, stage := range []string{"fit", "rollout"} {
		t.Run(stage, func(t *testing.T) {
			dir, _ := interrupted(t, NewOffline, cfg, stage, 1)
			wantStep, wantFitted := 0, stage == "rollout"
			c := resumed(t, ResumeOffline, dir)
			if c.step != wantStep || c.fitted != wantFitted || c.model != nil {
				t.Fatalf("resumed at update %d, fitted %v, model buffer %v; want %d, %v, none", c.step, c.fitted, c.model, wantStep, wantFitted)
			}
			if err := c.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			offSameRun(t, offCapture(c), want)
		})
	}
}
