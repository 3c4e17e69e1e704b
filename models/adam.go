package models

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/admpo/admpo/internal/cpukern"
)

// Adam is the Adam optimiser with PyTorch's semantics (torch.optim.Adam,
// amsgrad off):
//
//	g ← g + WeightDecay·p           (only when WeightDecay > 0)
//	m ← β1·m + (1-β1)·g
//	v ← β2·v + (1-β2)·g²
//	p ← p - LR/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + Eps)
//
// A new moment below the smallest normal float32 is stored as +0 (PyTorch
// keeps the subnormal): the moments of a parameter whose gradient stays 0, as
// a dead ReLU unit's weights, decay into the subnormal range, where x86
// arithmetic is many times slower, and the step they would give is below
// 1e-30.
//
// It updates parameter values in place, so weights stay in the slices of the
// structs that back the graph nodes. M, V and T are exported so checkpoints
// can save and restore the optimiser state.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	T    int         // number of steps taken
	M, V [][]float32 // first and second moments, one slice per parameter

	nodes  G.Nodes     // nil for an Adam made by NewAdamSlices
	params [][]float32 // the parameter values (node backing slices)
	grads  [][]float32 // scratch for Step
	err    error       // a parameter NewAdam could not use, reported by Step
}

// NewAdam returns an Adam over the float32 parameter nodes with betas
// 0.9/0.999, eps 1e-8 and no weight decay. The nodes must hold float32 values
// when NewAdam is called (e.g. nodes made by NewLinearNodes); each value's
// backing slice is what Step updates. A node without such a value makes every
// Step fail.
func NewAdam(params G.Nodes, lr float32) *Adam {
	vals := make([][]float32, len(params))
	var bad error
	for i, n := range params {
		var d []float32
		if v := n.Value(); v == nil {
			bad = fmt.Errorf("models: adam: parameter %v has no value", n.Name())
		} else if d, _ = v.Data().([]float32); d == nil {
			bad = fmt.Errorf("models: adam: parameter %v holds %T, want []float32", n.Name(), v.Data())
		}
		vals[i] = d
	}
	a := NewAdamSlices(vals, lr)
	a.nodes = params
	a.grads = make([][]float32, len(params))
	a.err = bad
	return a
}

// NewAdamSlices returns an Adam over raw parameter slices, stepped with
// StepGrads.
func NewAdamSlices(params [][]float32, lr float32) *Adam {
	a := &Adam{LR: float64(lr), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: params,
		M: make([][]float32, len(params)), V: make([][]float32, len(params))}
	for i, p := range params {
		a.M[i] = make([]float32, len(p))
		a.V[i] = make([]float32, len(p))
	}
	return a
}

// SetLR sets the learning rate used by the next steps.
func (a *Adam) SetLR(lr float32) { a.LR = float64(lr) }

// Params returns the parameter slices Adam updates.
func (a *Adam) Params() [][]float32 { return a.params }

// Step reads every parameter node's gradient (the gradient node's value after
// G.Grad, or the dual value with BindDualValues), updates the parameters in
// place and zeroes dual-value gradients, which would otherwise accumulate
// across runs.
func (a *Adam) Step() error {
	if a.nodes == nil {
		return fmt.Errorf("models: adam: Step needs parameter nodes; use StepGrads")
	}
	return a.StepNodes(a.nodes)
}

// StepNodes is Step with the gradients of nodes, another graph's nodes of
// the same parameters in the same order (their values backed by the same
// slices, e.g. the Params of ADM graphs of one model): one optimiser state
// serves several graphs.
func (a *Adam) StepNodes(nodes G.Nodes) error {
	if a.err != nil {
		return a.err
	}
	if len(nodes) != len(a.params) {
		return fmt.Errorf("models: adam: %d nodes for %d parameters", len(nodes), len(a.params))
	}
	if a.grads == nil {
		a.grads = make([][]float32, len(a.params))
	}
	var dual []int
	for i, n := range nodes {
		gv, err := n.Grad()
		if err != nil || gv == nil {
			return fmt.Errorf("models: adam: no gradient for %v: %v", n.Name(), err)
		}
		g, ok := gv.Data().([]float32)
		if !ok || len(g) != len(a.params[i]) {
			return fmt.Errorf("models: adam: gradient of %v has %T of wrong type or size", n.Name(), gv.Data())
		}
		if v, ok := n.Value().Data().([]float32); !ok || len(v) == 0 || &v[0] != &a.params[i][0] {
			return fmt.Errorf("models: adam: the value of %v was replaced; weights must be updated in place", n.Name())
		}
		a.grads[i] = g
		if d := n.Deriv(); d == nil || d.Value() != gv {
			dual = append(dual, i)
		}
	}
	if err := a.StepGrads(a.grads); err != nil {
		return err
	}
	for _, i := range dual {
		clear(a.grads[i])
	}
	return nil
}

// StepGrads takes one step with the given gradients, one per parameter.
func (a *Adam) StepGrads(grads [][]float32) error {
	if len(grads) != len(a.params) {
		return fmt.Errorf("models: adam: %d gradients for %d parameters", len(grads), len(a.params))
	}
	for i, g := range grads {
		if len(g) != len(a.params[i]) {
			return fmt.Errorf("models: adam: gradient %d has %d values, parameter has %d", i, len(g), len(a.params[i]))
		}
	}
	a.T++
	// Constants are formed in float64 and rounded once, as PyTorch does with
	// its Python-float hyper-parameters.
	h := cpukern.AdamHyper{Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps, WeightDecay: a.WeightDecay, LR: a.LR, T: a.T}
	for i, g := range grads {
		if err := cpukern.Adam(a.params[i], g, a.M[i][:len(g)], a.V[i][:len(g)], h); err != nil {
			return fmt.Errorf("models: adam: parameter %d: %w", i, err)
		}
	}
	return nil
}
