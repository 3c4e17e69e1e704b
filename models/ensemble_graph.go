package models

import (
	"fmt"

	admblas "github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
)

// EnsembleDecay is MBPO's per-layer weight decay for the 4x200 ensemble
// (input layer first), applied as 0.5·wd·Σw² to the weight matrices.
var EnsembleDecay = []float64{2.5e-5, 5e-5, 7.5e-5, 7.5e-5, 1e-4}

// EnsembleGraph is a compiled training graph for every member of an
// Ensemble, each on its own batch of Batch rows. The caller fills X[i]
// (normalised [obs, act], [Batch, ObsDim+ActDim]), Target[i] ([s'-s, r],
// [Batch, ObsDim+1]) and Weight[i] ([Batch], 1 for real rows, 0 for
// padding), then calls Run. The loss is
//
//	Σ_i [GaussianNLL_i + 0.01·ΣMax_i - 0.01·ΣMin_i] + Σ_i Σ_l 0.5·wd_l·Σ W_il²
//
// and its gradients land on Params' nodes.
type EnsembleGraph struct {
	Model *Ensemble
	Batch int

	X, Target, Weight [][]float32

	Mean, LogVar []*G.Node // per member [Batch, ObsDim+1]
	NLL          []*G.Node // per member
	Loss         *G.Node
	Params       G.Nodes

	g  *G.ExprGraph
	vm G.VM
}

// NewEnsembleTrainGraph builds the training graph of e with per-layer
// weight decay decay (len = number of layers; nil for none).
func NewEnsembleTrainGraph(e *Ensemble, batch int, decay []float64) (*EnsembleGraph, error) {
	admblas.Use()
	if batch <= 0 || len(e.Members) == 0 || len(e.Bounds) != len(e.Members) {
		return nil, fmt.Errorf("models: ensemble graph: batch %d, %d members, %d bounds", batch, len(e.Members), len(e.Bounds))
	}
	in, d := e.ObsDim+e.ActDim, e.ObsDim+1
	eg := &EnsembleGraph{Model: e, Batch: batch, g: G.NewGraph()}
	g := eg.g
	var terms G.Nodes
	for i := range e.Members {
		mem := &e.Members[i]
		if decay != nil && len(decay) != len(mem.Layers) {
			return nil, fmt.Errorf("models: %d weight decays for %d layers", len(decay), len(mem.Layers))
		}
		if err := checkLinear(fmt.Sprintf("ensemble member %d input", i), &mem.Layers[0], in, mem.Layers[0].Out); err != nil {
			return nil, err
		}
		if last := &mem.Layers[len(mem.Layers)-1]; last.Out != 2*d {
			return nil, fmt.Errorf("models: ensemble member %d outputs %d values, want %d", i, last.Out, 2*d)
		}
		eg.X = append(eg.X, make([]float32, batch*in))
		eg.Target = append(eg.Target, make([]float32, batch*d))
		eg.Weight = append(eg.Weight, make([]float32, batch))
		x := paramNode(g, fmt.Sprintf("ens%d.X", i), eg.X[i], batch, in)
		tg := paramNode(g, fmt.Sprintf("ens%d.Target", i), eg.Target[i], batch, d)
		w := paramNode(g, fmt.Sprintf("ens%d.Weight", i), eg.Weight[i], batch)
		net := NewMLPNodes(g, fmt.Sprintf("ens%d", i), mem)
		bounds := NewBoundsNodes(g, fmt.Sprintf("ens%d.bounds", i), &e.Bounds[i])
		eg.Params = append(eg.Params, net.Params()...)
		eg.Params = append(eg.Params, bounds.Params()...)
		o, err := net.Apply(x)
		if err != nil {
			return nil, fmt.Errorf("models: ensemble member %d: %w", i, err)
		}
		mean, err := ops.Columns(o, 0, d)
		if err != nil {
			return nil, err
		}
		raw, err := ops.Columns(o, d, 2*d)
		if err != nil {
			return nil, err
		}
		lv, err := bounds.Apply(raw)
		if err != nil {
			return nil, err
		}
		nll, err := ops.GaussianNLL(mean, lv, tg, w)
		if err != nil {
			return nil, err
		}
		pen, err := bounds.Penalty()
		if err != nil {
			return nil, err
		}
		eg.Mean, eg.LogVar, eg.NLL = append(eg.Mean, mean), append(eg.LogVar, lv), append(eg.NLL, nll)
		terms = append(terms, nll, pen)
		for l := range decay {
			if decay[l] == 0 {
				continue
			}
			wd, err := ops.SumSquares(net.Layers[l].W, float32(0.5*decay[l]))
			if err != nil {
				return nil, err
			}
			terms = append(terms, wd)
		}
	}
	loss := terms[0]
	for _, t := range terms[1:] {
		var err error
		if loss, err = G.Add(loss, t); err != nil {
			return nil, fmt.Errorf("models: ensemble loss: %w", err)
		}
	}
	eg.Loss = loss
	if _, err := G.Grad(eg.Loss, eg.Params...); err != nil {
		return nil, fmt.Errorf("models: ensemble gradients: %w", err)
	}
	eg.vm = G.NewTapeMachine(g)
	return eg, nil
}

// Run executes the graph once, leaving the gradients on Params' nodes.
func (eg *EnsembleGraph) Run() error {
	eg.vm.Reset()
	if err := eg.vm.RunAll(); err != nil {
		return fmt.Errorf("models: running ensemble graph: %w", err)
	}
	return nil
}

// LossValue returns the last run's total loss and each member's NLL.
func (eg *EnsembleGraph) LossValue() (loss float32, nll []float32, err error) {
	l, _, err := ops.ValueF32(eg.Loss.Value())
	if err != nil {
		return 0, nil, fmt.Errorf("models: ensemble loss: %w", err)
	}
	for i, n := range eg.NLL {
		v, _, err := ops.ValueF32(n.Value())
		if err != nil {
			return 0, nil, fmt.Errorf("models: ensemble member %d nll: %w", i, err)
		}
		nll = append(nll, v[0])
	}
	return l[0], nll, nil
}

// Close releases the machine.
func (eg *EnsembleGraph) Close() error { return eg.vm.Close() }
