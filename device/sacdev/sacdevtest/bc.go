package sacdevtest

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/sac"
)

// BCConfigOf is the device BC trainer's configuration of a sac.BC.
func BCConfigOf(b *sac.BC, batch int) sacdev.BCConfig {
	a := b.Actor
	var hidden []int
	for _, l := range a.Net.Layers[:len(a.Net.Layers)-1] {
		hidden = append(hidden, l.Out)
	}
	return sacdev.BCConfig{ObsDim: a.ObsDim, ActDim: a.ActDim, Hidden: hidden, Batch: batch, LR: b.Opt.LR,
		Scale: a.Scale, Bias: a.Bias}
}

// BCOptions tunes CompareBC to a device.
type BCOptions struct {
	Tol      float64 // as Options.Tol
	Outliers float64 // as Options.Outliers
	Steps    int     // default 3
	Graph    bool    // record the device step as a graph (from the second step)
}

// CompareBC runs sac.BC and a sacdev.BC on d from identical weights and
// batches for opt.Steps steps at hopper's sizes (11 observations, 3 actions
// with bounds whose scale and bias are not 1 and 0, 256x256, batch 256)
// and fails t where, after any step, the loss, a weight or an Adam moment
// differs beyond opt (weights and moments relative to each tensor's
// largest value, the loss relatively).
func CompareBC(t *testing.T, d device.Device, opt BCOptions) {
	steps := opt.Steps
	if steps == 0 {
		steps = 3
	}
	const lr = 3e-4
	actor := models.NewActor(obsDim, low, high, []int{256, 256}, rand.New(rand.NewSource(5)))
	cpu, err := sac.NewBC(actor, batch, lr)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	cfg := BCConfigOf(cpu, batch)
	cfg.Graph = opt.Graph
	dev, err := sacdev.NewBC(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := dev.SetWeights(mlpWeights(&actor.Net)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	got := mlpWeights(&actor.Net) // sized buffers, overwritten below
	o := device.AdamState{M: mlpWeights(&actor.Net), V: mlpWeights(&actor.Net)}
	for s := 1; s <= steps; s++ {
		b := randomBatch(rng)
		want, err := cpu.Update(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Upload(b.Obs, b.Act); err != nil {
			t.Fatal(err)
		}
		if err := dev.Step(); err != nil {
			t.Fatal(err)
		}
		loss, err := dev.Loss()
		if err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprintf("step %d", s)
		relClose(t, when+" loss", loss, want, opt.Tol)
		if err := dev.ActorWeights(got); err != nil {
			t.Fatal(err)
		}
		if err := dev.OptimInto(&o); err != nil {
			t.Fatal(err)
		}
		if o.T != cpu.Opt.T {
			t.Fatalf("%s: %d Adam steps, CPU %d", when, o.T, cpu.Opt.T)
		}
		worst := 0.0
		want0 := mlpWeights(&actor.Net)
		for j := range want0 {
			worst = max(worst, devicetest.CloseTo(t, fmt.Sprintf("%s actor tensor %d", when, j), got[j], want0[j], opt.Tol, opt.Outliers, 2*lr*float64(s)))
			devicetest.CloseTo(t, fmt.Sprintf("%s adam m %d", when, j), o.M[j], cpu.Opt.M[j], opt.Tol, opt.Outliers, 0)
			devicetest.CloseTo(t, fmt.Sprintf("%s adam v %d", when, j), o.V[j], cpu.Opt.V[j], opt.Tol, opt.Outliers, 0)
		}
		t.Logf("%s: loss %.7f (CPU %.7f); largest weight difference %.3g of its tensor's largest", when, loss, want, worst)
	}
}

// BenchBCStep reports the milliseconds per BC step (hopper's sizes, 256x256,
// batch 256) on d.
func BenchBCStep(b *testing.B, d device.Device) {
	actor := models.NewActor(obsDim, low, high, []int{256, 256}, rand.New(rand.NewSource(5)))
	cfg := sacdev.BCConfig{ObsDim: obsDim, ActDim: actDim, Hidden: []int{256, 256}, Batch: batch, LR: 3e-4,
		Scale: actor.Scale, Bias: actor.Bias}
	dev, err := sacdev.NewBC(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	if err := dev.SetWeights(mlpWeights(&actor.Net)); err != nil {
		b.Fatal(err)
	}
	bt := randomBatch(rand.New(rand.NewSource(3)))
	if err := dev.Upload(bt.Obs, bt.Act); err != nil {
		b.Fatal(err)
	}
	devicetest.BenchSteps(b, d, "step", dev.Step)
}
