package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/admpo/admpo/train"
)

// stoppedRun is a trainingRun that is interrupted at once, fitEpoch being
// where its model fit stood (0: not in a fit).
type stoppedRun struct{ fitEpoch int }

func (stoppedRun) Run(context.Context) error   { return train.ErrInterrupted }
func (stoppedRun) Step() int                   { return 0 }
func (stoppedRun) OnStatus(func(train.Status)) {}
func (stoppedRun) Close()                      {}
func (r stoppedRun) FitInterruptedAt() int     { return r.fitEpoch }

// TestInterruptLineSaysWhereTheFitStood: a run interrupted in its model fit
// names the fit epoch; one interrupted elsewhere its update.
func TestInterruptLineSaysWhereTheFitStood(t *testing.T) {
	dir := t.TempDir() // the run directory, where the run's builds.txt goes
	for _, c := range []struct {
		epoch int
		want  string
	}{
		{7, "interrupted in the model fit at epoch 7: checkpoint written; continue with --resume " + dir + "\n"},
		{0, "interrupted at update 0: checkpoint written; continue with --resume " + dir + "\n"},
	} {
		out, err := captureStdout(t, func() error { return runToEnd(stoppedRun{c.epoch}, dir, 10, "update", nil) })
		if !errors.Is(err, train.ErrInterrupted) || !strings.HasSuffix(out, c.want) {
			t.Errorf("fit epoch %d: printed %q (%v), want it to end %q", c.epoch, out, err, c.want)
		}
	}
}
