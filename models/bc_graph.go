package models

import (
	"fmt"

	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BCGraph is behaviour cloning's loss for a SAC actor: the mean squared
// error between the actor's deterministic action Scale ⊙ tanh(u) + Bias and
// the data set's action, averaged over the batch and the action dimensions,
//
//	loss = Σ_{r,j} (a_det(s_r)_j - a_rj)² / (batch · ActDim),
//
// with gradients for the actor's weights (the log-std outputs get none).
type BCGraph struct {
	sacProgram
	Obs, Act GraphInput
	Params   G.Nodes // the actor's weights
	loss     *G.Node
	action   *G.Node
}

// NewBCGraph builds the BC loss graph for batches of the given size, over
// actor's weights in place.
func NewBCGraph(actor *Actor, batch int) (b *BCGraph, err error) {
	defer recoverGraph("bc graph", &b, &err)
	ad := actor.ActDim
	g, err := newSACGraph(actor.ObsDim, actor.ActDim, batch)
	if err != nil {
		return nil, err
	}
	b = &BCGraph{sacProgram: sacProgram{g: g},
		Obs: NewGraphInput(g, "obs", batch, actor.ObsDim),
		Act: NewGraphInput(g, "act", batch, ad)}
	ops.MarkData(b.Obs.Node) // the first layer forms no input gradient
	an := NewActorNodes(g, "actor", actor)
	wrap := func(e error) error { return fmt.Errorf("models: bc graph: %w", e) }
	out, err := an.Net.Apply(b.Obs.Node)
	if err != nil {
		return nil, wrap(err)
	}
	u, err := ops.Columns(out, 0, ad)
	if err != nil {
		return nil, wrap(err)
	}
	scale := make([]float32, batch*ad)
	for r := 0; r < batch; r++ {
		copy(scale[r*ad:], actor.Scale)
	}
	scaleN := G.NewMatrix(g, G.Float32, G.WithShape(batch, ad), G.WithName("actor.scale"),
		G.WithValue(tensor.New(tensor.WithShape(batch, ad), tensor.WithBacking(scale))))
	biasN := G.NewVector(g, G.Float32, G.WithShape(ad), G.WithName("actor.bias"),
		G.WithValue(tensor.New(tensor.WithShape(ad), tensor.WithBacking(append([]float32(nil), actor.Bias...)))))
	var y, d *G.Node
	if y, err = G.Tanh(u); err == nil {
		if y, err = G.HadamardProd(y, scaleN); err == nil {
			if b.action, err = ops.AddBias(y, biasN); err == nil {
				if d, err = G.Sub(b.action, b.Act.Node); err == nil {
					if d, err = G.Square(d); err == nil {
						if d, err = G.Mul(d, sacConst(1/float64(batch*ad))); err == nil {
							b.loss, err = G.Sum(d)
						}
					}
				}
			}
		}
	}
	if err != nil {
		return nil, wrap(err)
	}
	if b.action, err = ops.KeepValue(b.action); err != nil {
		return nil, err
	}
	b.Params = an.Params()
	if err := b.compile(b.loss, b.Params, "bc gradients"); err != nil {
		return nil, err
	}
	return b, nil
}

// Run evaluates the loss and the actor's gradients; it returns the loss and
// a view of the deterministic actions [batch, ActDim].
func (b *BCGraph) Run() (loss float32, action []float32, err error) {
	if err := b.run(); err != nil {
		return 0, nil, fmt.Errorf("models: bc graph: %w", err)
	}
	return b.loss.Value().Data().(float32), sacValues(b.action), nil
}
