package models

import (
	"fmt"

	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file builds Gorgonia nodes for the plain weight structs. Every weight
// node's value is a tensor backed by the struct's own slice, so an optimiser
// that updates values in place (see Adam) trains the struct directly and the
// ONNX exporter reads the trained weights without any copy. Node names must
// be unique within a graph: Gorgonia merges input nodes that share name,
// type and shape.

// LinearNodes are the graph nodes of one Linear layer.
type LinearNodes struct {
	W, B *G.Node // W [In, Out], B [Out]
	// Frozen layers get no weight gradients (G.Grad with respect to W or B
	// fails); gradients still flow through them to their input. Use it
	// for networks that a loss reads but does not train, e.g. SAC's critics
	// in the actor loss.
	Frozen bool
}

// NewLinearNodes adds l's weights to g as nodes named name+".W" and name+".B",
// backed by l.W and l.B.
func NewLinearNodes(g *G.ExprGraph, name string, l *Linear) LinearNodes {
	w := G.NewMatrix(g, G.Float32, G.WithShape(l.In, l.Out), G.WithName(name+".W"),
		G.WithValue(tensor.New(tensor.WithShape(l.In, l.Out), tensor.WithBacking(l.W))))
	b := G.NewVector(g, G.Float32, G.WithShape(l.Out), G.WithName(name+".B"),
		G.WithValue(tensor.New(tensor.WithShape(l.Out), tensor.WithBacking(l.B))))
	return LinearNodes{W: w, B: b}
}

// Apply returns x·W + B for a float32 x of shape [batch, In], as one fused
// op (ops.Linear).
func (l LinearNodes) Apply(x *G.Node) (y *G.Node, err error) {
	y, err = ops.Linear(x, l.W, l.B, l.Frozen)
	if err != nil {
		return nil, fmt.Errorf("models: linear %v: %w", l.W.Name(), err)
	}
	return y, nil
}

// Params returns W and B.
func (l LinearNodes) Params() G.Nodes { return G.Nodes{l.W, l.B} }

// MLPNodes are the graph nodes of an MLP.
type MLPNodes struct {
	Layers     []LinearNodes
	Activation string
}

// NewMLPNodes adds m's layers to g as nodes named name+".<i>.W" and
// name+".<i>.B", backed by m's slices.
func NewMLPNodes(g *G.ExprGraph, name string, m *MLP) MLPNodes {
	n := MLPNodes{Activation: m.Activation}
	for i := range m.Layers {
		n.Layers = append(n.Layers, NewLinearNodes(g, fmt.Sprintf("%s.%d", name, i), &m.Layers[i]))
	}
	return n
}

// Apply runs x [batch, in] through the layers, with the activation after every
// layer but the last.
func (m MLPNodes) Apply(x *G.Node) (*G.Node, error) {
	h := x
	for i, l := range m.Layers {
		var err error
		if m.Activation == "relu" && (i > 0 || i+1 < len(m.Layers)) {
			// One op: the ReLU in the product's epilogue. Past the first
			// layer h is the previous layer's ReLU output, read by this
			// layer alone: its ReLU backward pass goes into the epilogue of
			// this layer's product dx = g·Wᵀ (ops.LinearAfterRelu).
			relu := i+1 < len(m.Layers)
			if i == 0 {
				h, err = ops.LinearRelu(h, l.W, l.B, l.Frozen)
			} else {
				h, err = ops.LinearAfterRelu(h, l.W, l.B, l.Frozen, relu)
			}
			if err != nil {
				return nil, fmt.Errorf("models: layer %s: %w", l.W.Name(), err)
			}
			continue
		}
		if h, err = l.Apply(h); err != nil {
			return nil, err
		}
		if i+1 < len(m.Layers) {
			if h, err = ops.Activate(m.Activation, h); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// Frozen returns a copy of m whose layers are all frozen (see
// LinearNodes.Frozen).
func (m MLPNodes) Frozen() MLPNodes {
	f := MLPNodes{Activation: m.Activation, Layers: append([]LinearNodes(nil), m.Layers...)}
	for i := range f.Layers {
		f.Layers[i].Frozen = true
	}
	return f
}

// Params returns every layer's W and B, in layer order.
func (m MLPNodes) Params() G.Nodes {
	var ps G.Nodes
	for _, l := range m.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}
