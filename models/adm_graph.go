package models

import (
	"fmt"

	admblas "github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
)

// ADMDropout is the dropout probability inside the ADM's ResBlocks.
const ADMDropout = 0.1

// ADMGraph is a compiled Gorgonia graph of an ADM over a fixed batch of
// start states, unrolled once for M = Cfg.M steps. The head runs on all M
// top-layer outputs at once (stacked time-major into [M·Batch, Hidden]), so
// one run yields the predictions for every k = 1..M.
//
// The caller fills the input slices, then calls Run. Row t·Batch+b of X is
// the normalised [s_b, a_{b,t+1}] (the start state repeated at every step);
// the matching row of Target is [s_{b,t+k} - s_b, r_{b,t+k}] with k = t+1,
// and Weight is 1 where that k-step target exists and 0 where the sequence
// ended earlier (or the row is padding).
//
// A training graph (NewADMTrainGraph) has dropout, the loss
//
//	GaussianNLL(mean, logvar; Target, Weight) + 0.01·ΣMax - 0.01·ΣMin
//
// and its gradients on Params; an inference graph (NewADMEvalGraph) has
// neither and only computes Mean and LogVar.
//
// A one-k training graph (NewADMTrainGraphK, K > 0) trains a single k, as
// the authors' fit does at every Adam step: it unrolls the GRU over K
// steps only (X is [K·Batch, ObsDim+ActDim], time-major as above) and runs
// the ResBlocks and the head on step K's top-layer output alone, so Target,
// Weight, Mean and LogVar have Batch rows, the K-step targets.
type ADMGraph struct {
	Model   *ADM
	Batch   int
	Dropout float64
	// K is the one k a one-k training graph trains (1..Model.Cfg.M); 0 for
	// a graph over every k.
	K int

	X      []float32 // [M·Batch, ObsDim+ActDim], normalised inputs
	Target []float32 // [M·Batch, ObsDim+1] (training only)
	Weight []float32 // [M·Batch] (training only)

	Mean, LogVar *G.Node // [M·Batch, ObsDim+1]; LogVar soft-clamped
	Loss, NLL    *G.Node // training only
	Params       G.Nodes // every weight node, in a fixed order

	g     *G.ExprGraph
	vm    G.VM
	masks [][]float32
	rng   *dropoutRNG
}

// NewADMTrainGraph builds the training graph of m for batch start states
// with dropout probability dropout (ADMDropout in the paper) drawn from a
// generator seeded with seed.
func NewADMTrainGraph(m *ADM, batch int, dropout float64, seed int64) (*ADMGraph, error) {
	return newADMGraph(m, batch, dropout, seed, true, 0)
}

// NewADMTrainGraphK builds the one-k training graph of m for k in 1..M:
// the GRU unrolled k steps, the ResBlocks and head at step k only, the loss
// on the k-step targets. Its weight nodes are backed by m's slices, as every
// graph of m, so graphs of several k (and the all-k graph) train one model;
// Params lists the same weights in the same order as NewADMTrainGraph's.
func NewADMTrainGraphK(m *ADM, k, batch int, dropout float64, seed int64) (*ADMGraph, error) {
	if k < 1 || k > m.Cfg.M {
		return nil, fmt.Errorf("models: one-k ADM graph for k = %d, want 1..%d", k, m.Cfg.M)
	}
	return newADMGraph(m, batch, dropout, seed, true, k)
}

// NewADMEvalGraph builds an inference graph (no dropout, no loss).
func NewADMEvalGraph(m *ADM, batch int) (*ADMGraph, error) {
	return newADMGraph(m, batch, 0, 0, false, 0)
}

// newADMGraph builds the graph over every k (k = 0) or the one-k training
// graph of k.
func newADMGraph(m *ADM, batch int, dropout float64, seed int64, train bool, k int) (*ADMGraph, error) {
	admblas.Use()
	cfg := m.Cfg
	if batch <= 0 || cfg.M <= 0 {
		return nil, fmt.Errorf("models: ADM graph needs batch > 0 and M > 0, got %d and %d", batch, cfg.M)
	}
	if dropout < 0 || dropout >= 1 {
		return nil, fmt.Errorf("models: dropout %v outside [0,1)", dropout)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	in := cfg.ObsDim + cfg.ActDim
	d := cfg.ObsDim + 1
	steps := cfg.M
	if k > 0 {
		steps = k
	}
	a := &ADMGraph{Model: m, Batch: batch, Dropout: dropout, K: k, g: G.NewGraph(), rng: newDropoutRNG(seed)}
	g := a.g
	a.X = make([]float32, steps*batch*in)
	x := paramNode(g, "adm.X", a.X, steps*batch, in)

	h := x
	for l := range m.GRU {
		gn := NewGRUNodes(g, fmt.Sprintf("adm.gru%d", l), &m.GRU[l])
		a.Params = append(a.Params, gn.Params()...)
		var err error
		if h, err = gn.Apply(h, steps); err != nil {
			return nil, err
		}
	}
	rows := steps * batch // the head's rows: every step's, or step k's alone
	if k > 0 {
		var err error
		if h, err = ops.Rows(h, (k-1)*batch, k*batch); err != nil {
			return nil, fmt.Errorf("models: one-k ADM graph: %w", err)
		}
		rows = batch
	}
	for b := range m.Blocks {
		bn := NewResBlockNodes(g, fmt.Sprintf("adm.block%d", b), &m.Blocks[b])
		a.Params = append(a.Params, bn.Params()...)
		var mask *G.Node
		if train && dropout > 0 {
			md := make([]float32, rows*cfg.Hidden)
			a.masks = append(a.masks, md)
			mask = paramNode(g, fmt.Sprintf("adm.mask%d", b), md, rows, cfg.Hidden)
		}
		var err error
		if h, err = bn.Apply(h, mask); err != nil {
			return nil, err
		}
	}
	out := NewLinearNodes(g, "adm.out", &m.Out)
	bounds := NewBoundsNodes(g, "adm.bounds", &m.Bounds)
	a.Params = append(a.Params, out.Params()...)
	a.Params = append(a.Params, bounds.Params()...)
	o, err := out.Apply(h)
	if err != nil {
		return nil, err
	}
	if a.Mean, err = ops.Columns(o, 0, d); err != nil {
		return nil, err
	}
	raw, err := ops.Columns(o, d, 2*d)
	if err != nil {
		return nil, err
	}
	if a.LogVar, err = bounds.Apply(raw); err != nil {
		return nil, err
	}
	if train {
		a.Target = make([]float32, rows*d)
		a.Weight = make([]float32, rows)
		tg := paramNode(g, "adm.Target", a.Target, rows, d)
		w := paramNode(g, "adm.Weight", a.Weight, rows)
		if a.NLL, err = ops.GaussianNLL(a.Mean, a.LogVar, tg, w); err != nil {
			return nil, err
		}
		pen, err := bounds.Penalty()
		if err != nil {
			return nil, err
		}
		if a.Loss, err = G.Add(a.NLL, pen); err != nil {
			return nil, fmt.Errorf("models: ADM loss: %w", err)
		}
		if _, err := G.Grad(a.Loss, a.Params...); err != nil {
			return nil, fmt.Errorf("models: ADM gradients: %w", err)
		}
	}
	a.vm = G.NewTapeMachine(g)
	return a, nil
}

// ShareDropout makes a draw its dropout masks from src's generator, so that
// the one-k graphs of a fit and its all-k graph form one seeded stream whose
// state src's DropoutState reports.
func (a *ADMGraph) ShareDropout(src *ADMGraph) { a.rng = src.rng }

// Run executes the graph once: with a training graph it draws fresh dropout
// masks and leaves the gradients on Params' nodes (read by Adam.Step).
func (a *ADMGraph) Run() error {
	for _, md := range a.masks {
		a.rng.fill(md, a.Dropout)
	}
	a.vm.Reset()
	if err := a.vm.RunAll(); err != nil {
		return fmt.Errorf("models: running ADM graph: %w", err)
	}
	return nil
}

// DropoutState is the state of the training graph's dropout generator:
// with SetDropoutState, a checkpointed fit draws the masks it would have
// drawn had it never stopped.
func (a *ADMGraph) DropoutState() uint64 { return a.rng.state }

// SetDropoutState restores a state DropoutState returned.
func (a *ADMGraph) SetDropoutState(s uint64) { a.rng.state = s }

// LossValue returns the last run's loss and NLL (training graphs only).
func (a *ADMGraph) LossValue() (loss, nll float32, err error) {
	if a.Loss == nil {
		return 0, 0, fmt.Errorf("models: not a training graph")
	}
	l, _, err := ops.ValueF32(a.Loss.Value())
	if err != nil {
		return 0, 0, fmt.Errorf("models: ADM loss: %w", err)
	}
	n, _, err := ops.ValueF32(a.NLL.Value())
	if err != nil {
		return 0, 0, fmt.Errorf("models: ADM nll: %w", err)
	}
	return l[0], n[0], nil
}

// Outputs returns the last run's mean and soft-clamped log-variance,
// [M·Batch, ObsDim+1] each ([Batch, ObsDim+1], the K-step predictions, for
// a one-k graph), as views valid until the next run.
func (a *ADMGraph) Outputs() (mean, logvar []float32, err error) {
	if mean, _, err = ops.ValueF32(a.Mean.Value()); err != nil {
		return nil, nil, fmt.Errorf("models: ADM mean: %w", err)
	}
	if logvar, _, err = ops.ValueF32(a.LogVar.Value()); err != nil {
		return nil, nil, fmt.Errorf("models: ADM logvar: %w", err)
	}
	return mean, logvar, nil
}

// Close releases the machine.
func (a *ADMGraph) Close() error { return a.vm.Close() }

// check verifies that every weight slice has the size the config implies.
func (m *ADM) check() error {
	c := m.Cfg
	in := c.ObsDim + c.ActDim
	d := c.ObsDim + 1
	bad := func(what string, got, want int) error {
		return fmt.Errorf("models: ADM %s has %d values, config %+v needs %d", what, got, c, want)
	}
	if len(m.GRU) != c.Layers {
		return fmt.Errorf("models: ADM has %d GRU layers, config says %d", len(m.GRU), c.Layers)
	}
	if len(m.Blocks) != c.ResBlocks {
		return fmt.Errorf("models: ADM has %d ResBlocks, config says %d", len(m.Blocks), c.ResBlocks)
	}
	if len(m.Norm.Mean) != in || len(m.Norm.Std) != in {
		return bad("normaliser", len(m.Norm.Mean), in)
	}
	h3 := 3 * c.Hidden
	for l, g := range m.GRU {
		li := c.Hidden
		if l == 0 {
			li = in
		}
		if g.In != li || g.Hidden != c.Hidden {
			return fmt.Errorf("models: ADM GRU layer %d is %dx%d, want %dx%d", l, g.In, g.Hidden, li, c.Hidden)
		}
		for _, s := range []struct {
			what string
			got  int
			want int
		}{{"Wi", len(g.Wi), li * h3}, {"Wh", len(g.Wh), c.Hidden * h3}, {"Bi", len(g.Bi), h3}, {"Bh", len(g.Bh), h3}} {
			if s.got != s.want {
				return bad(fmt.Sprintf("GRU[%d].%s", l, s.what), s.got, s.want)
			}
		}
	}
	for i, b := range m.Blocks {
		if err := checkLinear(fmt.Sprintf("ADM block %d", i), &b.Lin, c.Hidden, c.Hidden); err != nil {
			return err
		}
		if b.Norm.Dim != c.Hidden || len(b.Norm.Gamma) != c.Hidden || len(b.Norm.Beta) != c.Hidden {
			return bad(fmt.Sprintf("block %d LayerNorm", i), len(b.Norm.Gamma), c.Hidden)
		}
	}
	if err := checkLinear("ADM output", &m.Out, c.Hidden, 2*d); err != nil {
		return err
	}
	if len(m.Bounds.Max) != d || len(m.Bounds.Min) != d {
		return bad("bounds", len(m.Bounds.Max), d)
	}
	return nil
}

func checkLinear(what string, l *Linear, in, out int) error {
	if l.In != in || l.Out != out || len(l.W) != in*out || len(l.B) != out {
		return fmt.Errorf("models: %s layer is %dx%d with %d/%d values, want %dx%d", what, l.In, l.Out, len(l.W), len(l.B), in, out)
	}
	return nil
}
