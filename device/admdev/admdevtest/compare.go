package admdevtest

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/models"
)

// Options tunes Compare to a device.
type Options struct {
	// Cfg sizes the model; zero: Small.
	Cfg models.ADMConfig
	// Batch is the start states per step (0: 16).
	Batch int
	// Tol bounds each weight's difference from the CPU's by Tol times its
	// tensor's largest value, and the losses relatively.
	Tol float64
	// Outliers is the fraction of a tensor's weights allowed past Tol, each
	// within two Adam steps per step (2·lr·steps) plus Tol: Adam's first
	// steps move a weight by about lr·sign(g), so a gradient within
	// rounding of zero may step either way when sums run in another order.
	Outliers float64
	// Steps is the number of train steps compared (0: 3).
	Steps int
	// NoDropout trains without dropout (default: models.ADMDropout).
	NoDropout bool
	// Graph runs the trainer with admdev.Config.Graph: step 1 directly,
	// step 2 recorded as a device graph and replayed, later steps replayed.
	Graph bool
}

// Small is a model small enough for emu tests: hopper's dimensions, three
// GRU layers of 24 units, two ResBlocks, m = 4.
var Small = models.ADMConfig{ObsDim: 11, ActDim: 3, Hidden: 24, Layers: 3, ResBlocks: 2, M: 4}

// Reference is the paper's size at hopper's dimensions (issue 32's
// benchmark with batch 256): three GRU layers of 200, four ResBlocks, m = 5.
var Reference = models.DefaultADMConfig(11, 3, 5)

const lr = float32(3e-4)

// ConfigOf is the trainer's configuration of an ADM trained with batch
// start states, learning rate lr and dropout p.
func ConfigOf(m *models.ADM, batch int, lr float32, p float64) (admdev.Config, error) {
	c := m.Cfg
	eps := float32(1e-5)
	for i, b := range m.Blocks {
		if i == 0 {
			eps = b.Norm.Eps
		} else if b.Norm.Eps != eps {
			return admdev.Config{}, fmt.Errorf("admdevtest: blocks have LayerNorm eps %v and %v", eps, b.Norm.Eps)
		}
	}
	return admdev.Config{ObsDim: c.ObsDim, ActDim: c.ActDim, Hidden: c.Hidden, Layers: c.Layers, ResBlocks: c.ResBlocks,
		M: c.M, Batch: batch, LR: float64(lr), Dropout: p, Eps: eps}, nil
}

// randomBatch fills the graph's inputs: normalised inputs of order one,
// targets, and weights of sequences of random valid lengths (1..M).
func randomBatch(g *models.ADMGraph, rng *rand.Rand) admdev.Batch {
	for i := range g.X {
		g.X[i] = float32(rng.NormFloat64())
	}
	for i := range g.Target {
		g.Target[i] = float32(0.5 * rng.NormFloat64())
	}
	clear(g.Weight)
	m := g.Model.Cfg.M
	for r := range g.Batch {
		for k := range 1 + rng.Intn(m) {
			g.Weight[k*g.Batch+r] = 1
		}
	}
	return admdev.Batch{X: g.X, Target: g.Target, Weight: g.Weight}
}

func relClose(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol*math.Abs(want)) {
		t.Errorf("%s = %.9g, CPU %.9g (rel diff %.3g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

// Compare trains models' ADM graph and a Trainer on d from identical
// weights, batches and dropout masks (the same seed) for opt.Steps steps
// and fails t where, after any step, the loss, the NLL, an output or a
// weight differs beyond opt.
func Compare(t *testing.T, d device.Device, opt Options) {
	cfg, batch, steps := opt.Cfg, opt.Batch, opt.Steps
	if cfg == (models.ADMConfig{}) {
		cfg = Small
	}
	if batch == 0 {
		batch = 16
	}
	if steps == 0 {
		steps = 3
	}
	p := models.ADMDropout
	if opt.NoDropout {
		p = 0
	}
	m, err := models.NewADM(cfg, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	// Bounds and LayerNorm parameters away from their initial constants,
	// so that every term of their gradients shows.
	rng := rand.New(rand.NewSource(2))
	for i := range m.Bounds.Max {
		m.Bounds.Max[i] += float32(0.3 * rng.Float64())
		m.Bounds.Min[i] += float32(9 * rng.Float64())
	}
	for _, b := range m.Blocks {
		for j := range b.Norm.Gamma {
			b.Norm.Gamma[j] += float32(0.2 * rng.NormFloat64())
			b.Norm.Beta[j] += float32(0.2 * rng.NormFloat64())
		}
	}
	const seed = 5
	g, err := models.NewADMTrainGraph(m, batch, p, seed)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	opt2 := models.NewAdam(g.Params, lr)
	dc, err := ConfigOf(m, batch, lr, p)
	if err != nil {
		t.Fatal(err)
	}
	dc.Graph = opt.Graph
	tr, err := admdev.New(d, dc, seed)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.SetWeights(m.TrainedTensors()); err != nil {
		t.Fatal(err)
	}
	got := m.Clone().TrainedTensors()
	var nllSum float64 // Σ over steps of Σw·NLL, as a fit sums it
	for s := 1; s <= steps; s++ {
		b := randomBatch(g, rng)
		w := 0.0
		for _, v := range b.Weight {
			w += float64(v)
		}
		if err := tr.Upload(b); err != nil {
			t.Fatal(err)
		}
		if err := g.Run(); err != nil {
			t.Fatal(err)
		}
		if err := opt2.Step(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Step(); err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprintf("step %d", s)
		wl, wn, err := g.LossValue()
		if err != nil {
			t.Fatal(err)
		}
		gl, gn, err := tr.Loss()
		if err != nil {
			t.Fatal(err)
		}
		relClose(t, when+" loss", float64(gl), float64(wl), opt.Tol)
		relClose(t, when+" nll", float64(gn), float64(wn), opt.Tol)
		nllSum += float64(wn) * w
		gs, err := tr.NLLSum()
		if err != nil {
			t.Fatal(err)
		}
		relClose(t, when+" running sum of weighted nll", gs, nllSum, opt.Tol)
		wm, wv, err := g.Outputs()
		if err != nil {
			t.Fatal(err)
		}
		gm, gv, err := tr.Outputs()
		if err != nil {
			t.Fatal(err)
		}
		devicetest.CloseTo(t, when+" mean", gm, wm, opt.Tol, 0, 0)
		devicetest.CloseTo(t, when+" logvar", gv, wv, opt.Tol, 0, 0)
		if g.DropoutState() != tr.DropoutState() {
			t.Errorf("%s: dropout state %#x, CPU %#x", when, tr.DropoutState(), g.DropoutState())
		}
		if err := tr.WeightsInto(got); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, w := range m.TrainedTensors() {
			worst = max(worst, devicetest.CloseTo(t, fmt.Sprintf("%s tensor %d", when, i), got[i], w, opt.Tol,
				opt.Outliers, 2*float64(lr)*float64(s)))
		}
		t.Logf("%s: loss %.7f (CPU %.7f), nll %.7f (CPU %.7f); largest weight difference %.3g of its tensor's largest weight",
			when, gl, wl, gn, wn, worst)
	}
	// The Adam state matches models.Adam's, so checkpoints carry over.
	o := device.AdamState{}
	for _, n := range tr.Config().Sizes() {
		o.M, o.V = append(o.M, make([]float32, n)), append(o.V, make([]float32, n))
	}
	if err := tr.OptimInto(&o); err != nil {
		t.Fatal(err)
	}
	if o.T != opt2.T {
		t.Errorf("adam steps %d, CPU %d", o.T, opt2.T)
	}
	for i := range o.M {
		devicetest.CloseTo(t, fmt.Sprintf("adam m %d", i), o.M[i], opt2.M[i], max(opt.Tol, 1e-4), opt.Outliers, 0)
		devicetest.CloseTo(t, fmt.Sprintf("adam v %d", i), o.V[i], opt2.V[i], max(opt.Tol, 1e-4), opt.Outliers, 0)
	}
}
