package device

import (
	"errors"
	"fmt"
	"math"
)

// AdamK returns the adam_k kernel's constants for Adam step t (1-based) at
// learning rate lr with PyTorch's β1 0.9, β2 0.999, eps 1e-8 and no weight
// decay: b1, c1, b2, c2, step, bc2_sqrt, eps, wd, formed in float64 and
// rounded once, as models.Adam does.
func AdamK(t int, lr float64) []float32 {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2 := 1 - math.Pow(b2, float64(t))
	return []float32{float32(b1), float32(1 - b1), float32(b2), float32(1 - b2),
		float32(lr / bc1), float32(math.Sqrt(bc2)), float32(eps), 0}
}

// Replay runs a step that queues the same work every time: directly, or,
// once asked for graphs, directly the first time (which lets cuBLAS set
// itself up for its shapes), recorded as a Graph the second time and
// replayed from then on. The zero value is ready.
type Replay struct {
	graph Graph
	warm  bool
}

// Run queues one step on d: queue itself, or the recorded graph when graph
// is set (d must then be a Capturer).
func (r *Replay) Run(d Device, graph bool, queue func() error) error {
	if !graph || !r.warm {
		r.warm = true
		return queue()
	}
	if r.graph == nil {
		c, ok := d.(Capturer)
		if !ok {
			return fmt.Errorf("graph: device %s cannot record graphs: %w", d.Name(), ErrArgs)
		}
		if err := c.BeginCapture(); err != nil {
			return fmt.Errorf("graph: %w", err)
		}
		qerr := queue()
		g, err := c.EndCapture()
		if qerr != nil || err != nil {
			if g != nil {
				_ = g.Free()
			}
			return fmt.Errorf("graph: %w", errors.Join(qerr, err))
		}
		r.graph = g
	}
	return r.graph.Launch()
}

// Free releases the recorded graph, if any.
func (r *Replay) Free() error {
	if r.graph == nil {
		return nil
	}
	err := r.graph.Free()
	r.graph = nil
	return err
}

// Recorded reports whether a graph has been recorded.
func (r *Replay) Recorded() bool { return r.graph != nil }
