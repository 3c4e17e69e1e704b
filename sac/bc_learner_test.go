package sac

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/models"
)

// countingBC is a BCLearner that counts its calls; Pull writes 7 into the
// actor's first weight and sets the optimiser's step count to its steps.
type countingBC struct {
	steps, losses, pulls, pushes int
	lr                           float64
	fail                         bool
}

func (c *countingBC) Step(b *buffer.Batch, lr float64) error {
	if c.fail {
		return errors.New("step failed")
	}
	c.steps++
	c.lr = lr
	return nil
}

func (c *countingBC) Loss() (float64, error) {
	c.losses++
	return float64(c.steps) / 10, nil
}

func (c *countingBC) Pull(actor [][]float32, opt *models.Adam) error {
	c.pulls++
	actor[0][0] = 7
	opt.T = c.steps
	return nil
}

func (c *countingBC) Push(actor [][]float32, opt *models.Adam) error {
	c.pushes++
	return nil
}

// TestBCLearnerReadsBackOnlyWhenAsked: with a BCLearner, Step reads
// nothing back; LastLoss reads the loss once per step (NaN before the
// first), Sync pulls once after steps, and SetLearner pushes.
func TestBCLearnerReadsBackOnlyWhenAsked(t *testing.T) {
	actor := models.NewActor(3, []float64{-1, -1}, []float64{1, 1}, []int{8}, rand.New(rand.NewSource(1)))
	bc, err := NewBC(actor, 4, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	l := &countingBC{}
	if err := bc.SetLearner(l); err != nil {
		t.Fatal(err)
	}
	if v, err := bc.LastLoss(); err != nil || !math.IsNaN(v) || l.losses != 0 || l.pushes != 1 {
		t.Fatalf("before any step: loss %v (%v), %d loss reads, %d pushes", v, err, l.losses, l.pushes)
	}
	b := buffer.NewBatch(4, 3, 2)
	for range 3 {
		if err := bc.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	if l.steps != 3 || l.losses != 0 || l.pulls != 0 || bc.Updates != 3 || l.lr != 1e-3 {
		t.Fatalf("after 3 steps: %+v, %d updates", *l, bc.Updates)
	}
	for range 2 {
		if v, err := bc.LastLoss(); err != nil || v != 0.3 {
			t.Fatalf("last loss %v (%v), want 0.3", v, err)
		}
	}
	for range 2 {
		if err := bc.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if l.losses != 1 || l.pulls != 1 || actor.Net.Layers[0].W[0] != 7 || bc.Opt.T != 3 {
		t.Fatalf("after LastLoss and Sync twice: %d loss reads, %d pulls, weight %v, Adam steps %d",
			l.losses, l.pulls, actor.Net.Layers[0].W[0], bc.Opt.T)
	}
	l.fail = true
	if err := bc.Step(b); err == nil || bc.Updates != 3 {
		t.Errorf("a failed step: error %v, %d updates", err, bc.Updates)
	}
}
