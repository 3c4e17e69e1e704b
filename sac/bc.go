package sac

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// BC is behaviour cloning of a SAC actor: Adam on the mean squared error
// between the actor's deterministic (mean, tanh-squashed) action and the
// data set's action. The log-std head is not trained; evaluation uses the
// deterministic action.
//
// With a BCLearner (SetLearner) the steps run there: Actor and Opt are
// then current only after Sync.
type BC struct {
	Actor   *models.Actor
	Opt     *models.Adam
	Updates int
	g       *models.BCGraph

	learner    BCLearner
	stale      bool    // the learner stepped since the last Sync
	last       float64 // the last step's loss (NaN before the first)
	lossUnread bool    // the learner's last loss is not read back yet
}

// BCLearner runs BC's steps elsewhere (package train's device trainer).
// Tensors are in models' order: the actor's W0, B0, W1, B1, ...
type BCLearner interface {
	// Step does one Adam step on b at learning rate lr; it need not
	// read anything back.
	Step(b *buffer.Batch, lr float64) error
	// Loss reads back the last step's loss (before its Adam step).
	Loss() (float64, error)
	// Pull copies the learner's actor weights and Adam state into actor
	// and opt's moments and step count; Push sets them.
	Pull(actor [][]float32, opt *models.Adam) error
	Push(actor [][]float32, opt *models.Adam) error
}

// NewBC builds BC over actor's weights (trained in place) for batches of
// the given size.
func NewBC(actor *models.Actor, batch int, lr float64) (*BC, error) {
	g, err := models.NewBCGraph(actor, batch)
	if err != nil {
		return nil, fmt.Errorf("sac: bc: %w", err)
	}
	opt := models.NewAdam(g.Params, float32(lr))
	opt.LR = lr
	return &BC{Actor: actor, Opt: opt, g: g, last: math.NaN()}, nil
}

// SetLearner makes l run the steps from now on, starting from the host's
// actor and optimiser (pushed to l now); nil returns them to the host
// after copying l's state back.
func (b *BC) SetLearner(l BCLearner) error {
	if err := b.Sync(); err != nil {
		return err
	}
	if _, err := b.LastLoss(); err != nil {
		return err
	}
	b.learner = nil
	if l == nil {
		return nil
	}
	if err := l.Push(mlpViews(&b.Actor.Net), b.Opt); err != nil {
		return fmt.Errorf("sac: bc: set learner: %w", err)
	}
	b.learner = l
	return nil
}

// Sync copies a learner's actor and optimiser back to the host where steps
// ran since the last Sync; evaluation, export and Save need it first.
// Without a learner it does nothing.
func (b *BC) Sync() error {
	if b.learner == nil || !b.stale {
		return nil
	}
	if err := b.learner.Pull(mlpViews(&b.Actor.Net), b.Opt); err != nil {
		return fmt.Errorf("sac: bc: sync: %w", err)
	}
	b.stale = false
	return nil
}

// Update does one Adam step on a batch and returns the loss before the step.
func (b *BC) Update(batch *buffer.Batch) (float64, error) {
	if err := b.Step(batch); err != nil {
		return 0, err
	}
	return b.LastLoss()
}

// Step does one Adam step on a batch; with a learner it reads nothing
// back (LastLoss does, when asked).
func (b *BC) Step(batch *buffer.Batch) error {
	if b.learner != nil {
		if err := b.learner.Step(batch, b.Opt.LR); err != nil {
			return fmt.Errorf("sac: bc: step %d: %w", b.Updates+1, err)
		}
		b.Updates++
		b.stale, b.lossUnread = true, true
		return nil
	}
	loss, err := b.Loss(batch)
	if err != nil {
		return err
	}
	if err := b.Opt.Step(); err != nil {
		return fmt.Errorf("sac: bc: step: %w", err)
	}
	b.Updates++
	b.last = loss
	return nil
}

// LastLoss returns the last step's loss (before its Adam step), NaN before
// the first; with a learner the first call after a step reads it back.
func (b *BC) LastLoss() (float64, error) {
	if b.learner == nil || !b.lossUnread {
		return b.last, nil
	}
	l, err := b.learner.Loss()
	if err != nil {
		return b.last, fmt.Errorf("sac: bc: loss of step %d: %w", b.Updates, err)
	}
	b.last, b.lossUnread = l, false
	return l, nil
}

// Loss evaluates the loss on a batch without a step (its gradients are
// computed and discarded), on the host: with a learner it syncs first.
func (b *BC) Loss(batch *buffer.Batch) (float64, error) {
	if err := b.Sync(); err != nil {
		return 0, err
	}
	if err := b.g.Obs.Set(batch.Obs); err != nil {
		return 0, fmt.Errorf("sac: bc: %w", err)
	}
	if err := b.g.Act.Set(batch.Act); err != nil {
		return 0, fmt.Errorf("sac: bc: %w", err)
	}
	loss, _, err := b.g.Run()
	if err != nil {
		return 0, fmt.Errorf("sac: bc: %w", err)
	}
	return float64(loss), nil
}

// Close releases the graph's machine.
func (b *BC) Close() error { return b.g.Close() }

// Save stores the optimiser and the update count in sections bc/opt and
// bc/updates (the actor is saved with the SAC agent). With a learner,
// Sync must come first.
func (b *BC) Save(f *ckpt.File) {
	putAdam(f, "bc/opt", b.Opt)
	putCount(f, "bc/updates", b.Updates)
}

// Load restores what Save stored and pushes the actor (loaded with the
// SAC agent before) and the optimiser to the learner, if one is set.
func (b *BC) Load(f *ckpt.File) error {
	if err := loadAdam(f, "bc/opt", b.Opt); err != nil {
		return err
	}
	if err := loadCount(f, "bc/updates", &b.Updates); err != nil {
		return err
	}
	if b.learner != nil {
		b.stale, b.lossUnread = false, false
		if err := b.learner.Push(mlpViews(&b.Actor.Net), b.Opt); err != nil {
			return fmt.Errorf("sac: bc: load: %w", err)
		}
	}
	return nil
}
