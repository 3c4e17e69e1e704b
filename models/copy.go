package models

import "fmt"

// Weight copies for keeping the best weights during a fit and for
// re-initialising a model in place (graphs stay backed by the same slices).

// copyRefs copies every tensor of src into the matching one of dst.
func copyRefs(dst, src []tensorRef) error {
	if len(dst) != len(src) {
		return fmt.Errorf("models: copying %d tensors into %d", len(src), len(dst))
	}
	for i := range dst {
		if dst[i].Name != src[i].Name || len(dst[i].data) != len(src[i].data) {
			return fmt.Errorf("models: copying tensor %s (%d values) into %s (%d values)",
				src[i].Name, len(src[i].data), dst[i].Name, len(dst[i].data))
		}
		copy(dst[i].data, src[i].data)
	}
	return nil
}

// CopyFrom copies every weight, the normaliser and the bounds of src into
// m's existing slices; both must have the same config.
func (m *ADM) CopyFrom(src *ADM) error {
	if m.Cfg != src.Cfg {
		return fmt.Errorf("models: copying an ADM of config %+v into one of %+v", src.Cfg, m.Cfg)
	}
	return copyRefs(admRefs(m), admRefs(src))
}

// Clone returns a deep copy of m.
func (m *ADM) Clone() *ADM {
	c := &ADM{Cfg: m.Cfg,
		Norm:   Normalizer{Mean: cloneF32(m.Norm.Mean), Std: cloneF32(m.Norm.Std)},
		Out:    cloneLinear(m.Out),
		Bounds: LogVarBounds{Max: cloneF32(m.Bounds.Max), Min: cloneF32(m.Bounds.Min)}}
	for _, g := range m.GRU {
		c.GRU = append(c.GRU, GRULayer{In: g.In, Hidden: g.Hidden,
			Wi: cloneF32(g.Wi), Wh: cloneF32(g.Wh), Bi: cloneF32(g.Bi), Bh: cloneF32(g.Bh)})
	}
	for _, b := range m.Blocks {
		c.Blocks = append(c.Blocks, ResBlock{Lin: cloneLinear(b.Lin),
			Norm: LayerNorm{Dim: b.Norm.Dim, Gamma: cloneF32(b.Norm.Gamma), Beta: cloneF32(b.Norm.Beta), Eps: b.Norm.Eps}})
	}
	return c
}

// CopyMember copies member j of src (weights and bounds) into member i of
// e's existing slices.
func (e *Ensemble) CopyMember(i int, src *Ensemble, j int) error {
	if i < 0 || i >= len(e.Members) || j < 0 || j >= len(src.Members) {
		return fmt.Errorf("models: copying ensemble member %d into %d", j, i)
	}
	dst := append(mlpRefs("m", &e.Members[i]), ref("max", e.Bounds[i].Max), ref("min", e.Bounds[i].Min))
	from := append(mlpRefs("m", &src.Members[j]), ref("max", src.Bounds[j].Max), ref("min", src.Bounds[j].Min))
	return copyRefs(dst, from)
}

// Clone returns a deep copy of e.
func (e *Ensemble) Clone() *Ensemble {
	c := &Ensemble{ObsDim: e.ObsDim, ActDim: e.ActDim,
		Norm: Normalizer{Mean: cloneF32(e.Norm.Mean), Std: cloneF32(e.Norm.Std)}, Elites: append([]int(nil), e.Elites...)}
	for i, m := range e.Members {
		mc := MLP{Activation: m.Activation}
		for _, l := range m.Layers {
			mc.Layers = append(mc.Layers, cloneLinear(l))
		}
		c.Members = append(c.Members, mc)
		c.Bounds = append(c.Bounds, LogVarBounds{Max: cloneF32(e.Bounds[i].Max), Min: cloneF32(e.Bounds[i].Min)})
	}
	return c
}

func cloneF32(s []float32) []float32 { return append([]float32(nil), s...) }

func cloneLinear(l Linear) Linear {
	return Linear{In: l.In, Out: l.Out, W: cloneF32(l.W), B: cloneF32(l.B)}
}

// TrainedTensors returns views of m's trained weights (every tensor but
// the normaliser's) in the order of an ADM training graph's Params: per GRU
// layer Wi, Bi, Wh, Bh; per ResBlock W, B, Gamma, Beta; Out's W, B; the
// bounds' Max, Min. Device trainers load and store weights through it.
func (m *ADM) TrainedTensors() [][]float32 {
	refs := admRefs(m)[2:]
	ts := make([][]float32, len(refs))
	for i, r := range refs {
		ts[i] = r.data
	}
	return ts
}

// TrainedTensors returns views of the weights the ensemble's training graph
// trains, in the order of its Params (NewEnsembleTrainGraph): per member,
// each layer's W and B, then the bounds' Max and Min. Writing into them
// updates the ensemble.
func (e *Ensemble) TrainedTensors() [][]float32 {
	var ts [][]float32
	for i := range e.Members {
		for l := range e.Members[i].Layers {
			ts = append(ts, e.Members[i].Layers[l].W, e.Members[i].Layers[l].B)
		}
		ts = append(ts, e.Bounds[i].Max, e.Bounds[i].Min)
	}
	return ts
}
