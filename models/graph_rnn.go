package models

import (
	"fmt"

	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gorgonia node builders for the recurrent dynamics models: a GRU layer
// unrolled over time, LayerNorm, ResBlock and the learnable log-variance
// bounds. They hold the weights as graph nodes and apply the fused ops of
// package ops: one node per layer instead of dozens of small Gorgonia ops,
// which is what makes a multi-step GRU train step fast.

// paramNode adds a float32 node to g whose value is backed by data.
func paramNode(g *G.ExprGraph, name string, data []float32, shape ...int) *G.Node {
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	if len(shape) == 1 {
		return G.NewVector(g, G.Float32, G.WithShape(shape...), G.WithName(name), G.WithValue(v))
	}
	return G.NewMatrix(g, G.Float32, G.WithShape(shape...), G.WithName(name), G.WithValue(v))
}

// GRUNodes are the graph nodes of one GRU layer.
type GRUNodes struct {
	Wi, Bi, Wh, Bh *G.Node // [In,3H], [3H], [H,3H], [3H]
	Hidden         int
}

// NewGRUNodes adds l's weights to g as nodes named name+".Wi", ".Bi", ".Wh"
// and ".Bh", backed by l's slices.
func NewGRUNodes(g *G.ExprGraph, name string, l *GRULayer) GRUNodes {
	h3 := 3 * l.Hidden
	return GRUNodes{
		Wi:     paramNode(g, name+".Wi", l.Wi, l.In, h3),
		Bi:     paramNode(g, name+".Bi", l.Bi, h3),
		Wh:     paramNode(g, name+".Wh", l.Wh, l.Hidden, h3),
		Bh:     paramNode(g, name+".Bh", l.Bh, h3),
		Hidden: l.Hidden,
	}
}

// Apply runs the layer over steps time-major steps of x [steps·batch, In]
// (row t·batch+b is step t of sequence b) from a zero state and returns every
// step's hidden state, [steps·batch, Hidden] in the same row order. Its
// output is the next layer's input. A gradient with respect to x is formed
// only when x is computed by other nodes; a data input gets none.
func (n GRUNodes) Apply(x *G.Node, steps int) (*G.Node, error) {
	y, err := ops.GRU(x, n.Wi, n.Bi, n.Wh, n.Bh, steps)
	if err != nil {
		return nil, fmt.Errorf("models: GRU layer %s: %w", n.Wi.Name(), err)
	}
	return y, nil
}

// Params returns Wi, Bi, Wh and Bh.
func (n GRUNodes) Params() G.Nodes { return G.Nodes{n.Wi, n.Bi, n.Wh, n.Bh} }

// LayerNormNodes are the graph nodes of a LayerNorm.
type LayerNormNodes struct {
	Gamma, Beta *G.Node // [Dim]
	Eps         float32
}

// NewLayerNormNodes adds n's Gamma and Beta to g, backed by n's slices.
func NewLayerNormNodes(g *G.ExprGraph, name string, n *LayerNorm) LayerNormNodes {
	return LayerNormNodes{
		Gamma: paramNode(g, name+".Gamma", n.Gamma, n.Dim),
		Beta:  paramNode(g, name+".Beta", n.Beta, n.Dim),
		Eps:   n.Eps,
	}
}

// Apply normalises every row of x [R, Dim].
func (n LayerNormNodes) Apply(x *G.Node) (*G.Node, error) {
	y, err := ops.LayerNorm(x, n.Gamma, n.Beta, n.Eps)
	if err != nil {
		return nil, fmt.Errorf("models: layer norm %s: %w", n.Gamma.Name(), err)
	}
	return y, nil
}

// Params returns Gamma and Beta.
func (n LayerNormNodes) Params() G.Nodes { return G.Nodes{n.Gamma, n.Beta} }

// ResBlockNodes are the graph nodes of a ResBlock.
type ResBlockNodes struct {
	Lin  LinearNodes
	Norm LayerNormNodes
}

// NewResBlockNodes adds b's weights to g (name+".Lin", name+".Norm").
func NewResBlockNodes(g *G.ExprGraph, name string, b *ResBlock) ResBlockNodes {
	return ResBlockNodes{
		Lin:  NewLinearNodes(g, name+".Lin", &b.Lin),
		Norm: NewLayerNormNodes(g, name+".Norm", &b.Norm),
	}
}

// Apply returns LayerNorm(x + mask ⊙ Swish(x·W + b)) for x [R, Dim]. mask
// [R, Dim] holds the dropout multipliers (0 or 1/(1-p)); nil means no
// dropout (inference).
func (n ResBlockNodes) Apply(x, mask *G.Node) (*G.Node, error) {
	u, err := n.Lin.Apply(x)
	if err != nil {
		return nil, err
	}
	y, err := ops.ResBlockTail(u, x, n.Norm.Gamma, n.Norm.Beta, mask, n.Norm.Eps)
	if err != nil {
		return nil, fmt.Errorf("models: res block %s: %w", n.Lin.W.Name(), err)
	}
	return y, nil
}

// Params returns the Linear's and the LayerNorm's parameters.
func (n ResBlockNodes) Params() G.Nodes { return append(n.Lin.Params(), n.Norm.Params()...) }

// BoundsNodes are the graph nodes of learnable log-variance bounds.
type BoundsNodes struct {
	Max, Min *G.Node // [Dim]
}

// NewBoundsNodes adds b's Max and Min to g, backed by b's slices.
func NewBoundsNodes(g *G.ExprGraph, name string, b *LogVarBounds) BoundsNodes {
	return BoundsNodes{
		Max: paramNode(g, name+".Max", b.Max, len(b.Max)),
		Min: paramNode(g, name+".Min", b.Min, len(b.Min)),
	}
}

// Apply soft-clamps the raw log-variance lv [R, Dim]:
// lv = Max - softplus(Max - lv); lv = Min + softplus(lv - Min).
func (n BoundsNodes) Apply(lv *G.Node) (*G.Node, error) {
	return ops.SoftClamp(lv, n.Max, n.Min)
}

// Penalty returns 0.01·Σ Max - 0.01·Σ Min, the term that keeps the bounds tight.
func (n BoundsNodes) Penalty() (*G.Node, error) {
	pmax, err := ops.ScaledSum(n.Max, 0.01)
	if err != nil {
		return nil, fmt.Errorf("models: bounds penalty: %w", err)
	}
	pmin, err := ops.ScaledSum(n.Min, -0.01)
	if err != nil {
		return nil, fmt.Errorf("models: bounds penalty: %w", err)
	}
	p, err := G.Add(pmax, pmin)
	if err != nil {
		return nil, fmt.Errorf("models: bounds penalty: %w", err)
	}
	return p, nil
}

// Params returns Max and Min.
func (n BoundsNodes) Params() G.Nodes { return G.Nodes{n.Max, n.Min} }
