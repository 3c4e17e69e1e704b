package ensdevtest

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/ensdev"
	"github.com/admpo/admpo/models"
)

// Options tunes Compare to a device.
type Options struct {
	// Hidden are the members' hidden widths (nil: 4x200, MBPO's), Members
	// their number (0: 7) and Batch the rows per member (0: 64).
	Hidden         []int
	Members, Batch int
	// Tol bounds each weight's and Adam moment's difference from the CPU's
	// by Tol times its tensor's largest value, and the losses relatively.
	Tol float64
	// Outliers is the fraction of a tensor's weights allowed past Tol,
	// each within two Adam steps per step (2·lr·steps) plus Tol: Adam's
	// first steps move a weight by about lr·g/(|g|+1e-8), so a gradient
	// near zero summed in another order may move it differently. The
	// product kernels of emu and of Gorgonia's dense layers sum 200-wide
	// products in other orders, so even emu needs some at MBPO's size
	// (up to 5 of 40000, 1 of 4800 of a tensor, while the Adam moments, i.e. the gradients,
	// agree within 4e-7 of their tensor's largest). The moments have no
	// outliers.
	Outliers float64
	Steps    int  // train steps compared (0: 1)
	Graph    bool // ensdev.Config.Graph
}

const (
	obsDim, actDim = 11, 3
	lr             = float32(1e-3)
)

// ConfigOf is the trainer's configuration of e trained on batches of batch
// rows per member with learning rate lr and per-layer weight decay decay.
func ConfigOf(e *models.Ensemble, batch int, lr float32, decay []float64) ensdev.Config {
	m := &e.Members[0]
	var hidden []int
	for _, l := range m.Layers[:len(m.Layers)-1] {
		hidden = append(hidden, l.Out)
	}
	return ensdev.Config{ObsDim: e.ObsDim, ActDim: e.ActDim, Hidden: hidden, Members: len(e.Members), Batch: batch,
		LR: float64(lr), Decay: decay}
}

// randomBatch fills the graph's inputs: normalised inputs of order one,
// targets, and weights 1 but for some padding rows (weight 0).
func randomBatch(g *models.EnsembleGraph, rng *rand.Rand) ensdev.Batch {
	for i := range g.X {
		for j := range g.X[i] {
			g.X[i][j] = float32(rng.NormFloat64())
		}
		for j := range g.Target[i] {
			g.Target[i][j] = float32(0.5 * rng.NormFloat64())
		}
		for j := range g.Weight[i] {
			g.Weight[i][j] = 1
			if rng.Intn(6) == 0 {
				g.Weight[i][j] = 0
			}
		}
	}
	return ensdev.Batch{X: g.X, Target: g.Target, Weight: g.Weight}
}

func sized(ts [][]float32) [][]float32 {
	out := make([][]float32, len(ts))
	for i, t := range ts {
		out[i] = make([]float32, len(t))
	}
	return out
}

// decayTerm is Σ_i Σ_l 0.5·wd_l·ΣW_il² in float64 (the part of the CPU's
// loss the trainer's Losses leave out).
func decayTerm(e *models.Ensemble, decay []float64) float64 {
	s := 0.0
	for i := range e.Members {
		for l, wd := range decay {
			for _, v := range e.Members[i].Layers[l].W {
				s += 0.5 * wd * float64(v) * float64(v)
			}
		}
	}
	return s
}

func relClose(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol*math.Abs(want)) {
		t.Errorf("%s = %.9g, CPU %.9g (rel diff %.3g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

// Compare runs models' ensemble training graph with models.Adam on the CPU
// and an ensdev.Trainer on d from the same weights and batches (hopper's
// dimensions, MBPO's weight decay, padding rows of weight 0) and fails t
// where, after any step, a member's NLL, the total loss (the trainer's
// losses plus the weight decay of the weights before the step), a weight
// or an Adam moment differs beyond opt (the moments without outliers).
func Compare(t *testing.T, d device.Device, opt Options) {
	hidden, members, batch, steps := opt.Hidden, opt.Members, opt.Batch, opt.Steps
	if hidden == nil {
		hidden = []int{200, 200, 200, 200}
	}
	if members == 0 {
		members = 7
	}
	if batch == 0 {
		batch = 64
	}
	if steps == 0 {
		steps = 1
	}
	decay := models.EnsembleDecay
	if len(hidden)+1 != len(decay) {
		decay = make([]float64, len(hidden)+1)
		for l := range decay {
			decay[l] = 2.5e-5 * float64(l+1)
		}
	}
	rng := rand.New(rand.NewSource(21))
	e := models.NewEnsemble(obsDim, actDim, members, hidden, rng)
	// Bounds apart from their initial values, so that the soft clamp and
	// the penalty's gradients differ per dimension.
	for i := range e.Bounds {
		for j := range e.Bounds[i].Max {
			e.Bounds[i].Max[j] += float32(0.3 * rng.NormFloat64())
			e.Bounds[i].Min[j] += float32(0.3 * rng.NormFloat64())
		}
	}
	g, err := models.NewEnsembleTrainGraph(e, batch, decay)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cpuOpt := models.NewAdam(g.Params, lr)
	cfg := ConfigOf(e, batch, lr, decay)
	cfg.Graph = opt.Graph
	tr, err := ensdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.SetWeights(e.TrainedTensors()); err != nil {
		t.Fatal(err)
	}
	got := sized(e.TrainedTensors())
	o := device.AdamState{M: sized(got), V: sized(got)}
	for s := 1; s <= steps; s++ {
		when := fmt.Sprintf("step %d", s)
		b := randomBatch(g, rng)
		if err := tr.Upload(b); err != nil {
			t.Fatal(err)
		}
		wd := decayTerm(e, decay)
		if err := g.Run(); err != nil {
			t.Fatal(err)
		}
		if err := cpuOpt.Step(); err != nil {
			t.Fatal(err)
		}
		wantLoss, wantNLL, err := g.LossValue()
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Step(); err != nil {
			t.Fatal(err)
		}
		loss, nll, err := tr.Losses()
		if err != nil {
			t.Fatal(err)
		}
		total := wd
		for i := range nll {
			relClose(t, fmt.Sprintf("%s member %d NLL", when, i), float64(nll[i]), float64(wantNLL[i]), opt.Tol)
			total += float64(loss[i])
		}
		relClose(t, when+" loss", total, float64(wantLoss), opt.Tol)
		if err := tr.WeightsInto(got); err != nil {
			t.Fatal(err)
		}
		if err := tr.OptimInto(&o); err != nil {
			t.Fatal(err)
		}
		if o.T != cpuOpt.T {
			t.Fatalf("%s: %d Adam steps, CPU %d", when, o.T, cpuOpt.T)
		}
		worst := 0.0
		abs := 2 * float64(lr) * float64(s)
		for j, w := range e.TrainedTensors() {
			worst = max(worst, devicetest.CloseTo(t, fmt.Sprintf("%s tensor %d", when, j), got[j], w, opt.Tol, opt.Outliers, abs))
			devicetest.CloseTo(t, fmt.Sprintf("%s adam m %d", when, j), o.M[j], cpuOpt.M[j], opt.Tol, 0, 0)
			devicetest.CloseTo(t, fmt.Sprintf("%s adam v %d", when, j), o.V[j], cpuOpt.V[j], opt.Tol, 0, 0)
		}
		t.Logf("%s: loss %.7f (CPU %.7f), member 0 NLL %.7f (CPU %.7f); largest weight difference %.3g of its tensor's largest",
			when, total, wantLoss, nll[0], wantNLL[0], worst)
	}
}
