package sac

import (
	"fmt"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// BC is behaviour cloning of a SAC actor: Adam on the mean squared error
// between the actor's deterministic (mean, tanh-squashed) action and the
// data set's action. The log-std head is not trained; evaluation uses the
// deterministic action.
type BC struct {
	Actor   *models.Actor
	Opt     *models.Adam
	Updates int
	g       *models.BCGraph
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
	return &BC{Actor: actor, Opt: opt, g: g}, nil
}

// Update does one Adam step on a batch and returns the loss before the step.
func (b *BC) Update(batch *buffer.Batch) (float64, error) {
	loss, err := b.Loss(batch)
	if err != nil {
		return 0, err
	}
	if err := b.Opt.Step(); err != nil {
		return 0, fmt.Errorf("sac: bc: step: %w", err)
	}
	b.Updates++
	return loss, nil
}

// Loss evaluates the loss on a batch without a step (its gradients are
// computed and discarded).
func (b *BC) Loss(batch *buffer.Batch) (float64, error) {
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
// bc/updates (the actor is saved with the SAC agent).
func (b *BC) Save(f *ckpt.File) {
	putAdam(f, "bc/opt", b.Opt)
	putCount(f, "bc/updates", b.Updates)
}

// Load restores what Save stored.
func (b *BC) Load(f *ckpt.File) error {
	if err := loadAdam(f, "bc/opt", b.Opt); err != nil {
		return err
	}
	return loadCount(f, "bc/updates", &b.Updates)
}
