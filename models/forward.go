package models

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/models/ops"
)

// Plain-Go float32 inference for the ADM and the ensemble (no Gorgonia):
// batched, row-major, matrix products through OpenBLAS. Used by the roll-out
// engine's tests and the pure-Go paths. Outputs are the mean of
// [s' - s, r] and the soft-clamped log-variance, ObsDim+1 values per row.

// Scratch holds reusable buffers for the forward passes; the zero value is
// ready to use. One Scratch must not be used by two goroutines at once.
type Scratch struct {
	bufs [][]float32
}

func (s *Scratch) get(i, n int) []float32 {
	for len(s.bufs) <= i {
		s.bufs = append(s.bufs, nil)
	}
	if cap(s.bufs[i]) < n {
		s.bufs[i] = make([]float32, n)
	}
	s.bufs[i] = s.bufs[i][:n]
	return s.bufs[i]
}

// ADMState is the GRU state of a batch of ADM sequences: after k calls of
// GRUStep it holds h_k of every layer for every row.
type ADMState struct {
	Batch int
	Steps int         // GRU steps taken since the last Reset
	H     [][]float32 // [Layers][Batch·Hidden]
	s     Scratch
}

// NewState returns a zero state for batch sequences.
func (m *ADM) NewState(batch int) *ADMState {
	st := &ADMState{Batch: batch, H: make([][]float32, m.Cfg.Layers)}
	for l := range st.H {
		st.H[l] = make([]float32, batch*m.Cfg.Hidden)
	}
	return st
}

// Reset zeroes the hidden states.
func (st *ADMState) Reset() {
	for _, h := range st.H {
		clear(h)
	}
	st.Steps = 0
}

// normalizeInto writes (concat(obs_r, act_r) - Mean)/Std for every row.
func (n *Normalizer) normalizeInto(dst, obs, act []float32, obsDim, actDim, rows int) {
	in := obsDim + actDim
	for r := 0; r < rows; r++ {
		d := dst[r*in : (r+1)*in]
		copy(d[:obsDim], obs[r*obsDim:(r+1)*obsDim])
		copy(d[obsDim:], act[r*actDim:(r+1)*actDim])
		for j := range d {
			d[j] = (d[j] - n.Mean[j]) / n.Std[j]
		}
	}
}

// GRUStep advances every row of st by one step with input [obs_r, act_r]
// (raw, normalised here): obs [Batch·ObsDim] (the start state for the ADM)
// and act [Batch·ActDim].
func (m *ADM) GRUStep(st *ADMState, obs, act []float32) error {
	c := m.Cfg
	b := st.Batch
	if len(obs) != b*c.ObsDim || len(act) != b*c.ActDim || len(st.H) != c.Layers {
		return fmt.Errorf("models: ADM step: %d obs and %d act values for batch %d (obs %d, act %d), %d layers",
			len(obs), len(act), b, c.ObsDim, c.ActDim, len(st.H))
	}
	in := c.ObsDim + c.ActDim
	h, h3 := c.Hidden, 3*c.Hidden
	x := st.s.get(0, b*in)
	m.Norm.normalizeInto(x, obs, act, c.ObsDim, c.ActDim, b)
	gi := st.s.get(1, b*h3)
	gh := st.s.get(2, b*h3)
	gates := st.s.get(3, b*h3)
	ghn := st.s.get(4, b*h)
	next := st.s.get(5, b*h)
	inDim := in
	for l := range m.GRU {
		g := &m.GRU[l]
		ops.Sgemm(false, false, b, h3, inDim, 1, x, inDim, g.Wi, h3, 0, gi, h3)
		for r := 0; r < b; r++ {
			copy(gh[r*h3:(r+1)*h3], g.Bh)
		}
		prev := st.H[l]
		if st.Steps > 0 {
			ops.Sgemm(false, false, b, h3, h, 1, prev, h, g.Wh, h3, 1, gh, h3)
		}
		var pr []float32
		if st.Steps > 0 {
			pr = prev
		}
		ops.GRUCellRows(b, h, gi, g.Bi, gh, pr, gates, ghn, next)
		copy(prev, next)
		x, inDim = prev, h
	}
	st.Steps++
	return nil
}

// Head writes the prediction for the current step of every row of st:
// mean and soft-clamped logvar, [Batch·(ObsDim+1)] each.
func (m *ADM) Head(st *ADMState, mean, logvar []float32) error {
	return m.HeadDropout(st, nil, mean, logvar)
}

// HeadDropout is Head with dropout in the ResBlocks: mult [ResBlocks,
// Batch, Hidden] multiplies each block's Swish(x·W + b) (0 for a dropped
// unit, 1/(1-p) for a kept one); nil mult is Head.
func (m *ADM) HeadDropout(st *ADMState, mult, mean, logvar []float32) error {
	c := m.Cfg
	b := st.Batch
	d := c.ObsDim + 1
	if len(mean) != b*d || len(logvar) != b*d {
		return fmt.Errorf("models: ADM head: outputs of %d and %d values, want %d", len(mean), len(logvar), b*d)
	}
	if mult != nil && len(mult) != c.ResBlocks*b*c.Hidden {
		return fmt.Errorf("models: ADM head: dropout multipliers of %d values, want %d", len(mult), c.ResBlocks*b*c.Hidden)
	}
	if st.Steps == 0 {
		return fmt.Errorf("models: ADM head: no GRU step taken")
	}
	h := c.Hidden
	x := st.s.get(6, b*h)
	copy(x, st.H[c.Layers-1])
	u := st.s.get(7, b*h)
	xhat := st.s.get(8, b*h)
	inv := st.s.get(9, b)
	for i := range m.Blocks {
		blk := &m.Blocks[i]
		linearInto(&blk.Lin, x, b, u)
		ops.SwishInPlace(u)
		if mult != nil {
			for j, v := range mult[i*b*h : (i+1)*b*h] {
				u[j] *= v
			}
		}
		for j, v := range u {
			x[j] += v
		}
		ops.LayerNormRows(x, blk.Norm.Gamma, blk.Norm.Beta, x, xhat, inv, h, blk.Norm.Eps)
	}
	o := st.s.get(10, b*2*d)
	linearInto(&m.Out, x, b, o)
	splitGaussian(o, b, d, &m.Bounds, mean, logvar)
	return nil
}

// PredictAll unrolls the ADM once from the start states start
// [Batch·ObsDim] with actions acts[k] [Batch·ActDim] for k = 0..K-1 and
// writes the k+1-step predictions into mean[k] and logvar[k]
// [Batch·(ObsDim+1)]; st (may be nil) is reset first and reused.
func (m *ADM) PredictAll(st *ADMState, batch int, start []float32, acts, mean, logvar [][]float32) (*ADMState, error) {
	if len(acts) != len(mean) || len(acts) != len(logvar) {
		return st, fmt.Errorf("models: ADM predict: %d action steps, %d mean and %d logvar outputs", len(acts), len(mean), len(logvar))
	}
	if st == nil || st.Batch != batch {
		st = m.NewState(batch)
	}
	st.Reset()
	for k := range acts {
		if err := m.GRUStep(st, start, acts[k]); err != nil {
			return st, err
		}
		if err := m.Head(st, mean[k], logvar[k]); err != nil {
			return st, err
		}
	}
	return st, nil
}

// linearInto writes x·W + B for x [rows, In] into y [rows, Out].
func linearInto(l *Linear, x []float32, rows int, y []float32) {
	for r := 0; r < rows; r++ {
		copy(y[r*l.Out:(r+1)*l.Out], l.B)
	}
	ops.Sgemm(false, false, rows, l.Out, l.In, 1, x, l.In, l.W, l.Out, 1, y, l.Out)
}

// splitGaussian splits rows of o [rows, 2d] into mean and soft-clamped logvar.
func splitGaussian(o []float32, rows, d int, b *LogVarBounds, mean, logvar []float32) {
	for r := 0; r < rows; r++ {
		copy(mean[r*d:(r+1)*d], o[r*2*d:r*2*d+d])
		for j := 0; j < d; j++ {
			mx, mn := float64(b.Max[j]), float64(b.Min[j])
			a := mx - ops.Softplus(mx-float64(o[r*2*d+d+j]))
			logvar[r*d+j] = float32(mn + ops.Softplus(a-mn))
		}
	}
}

// MLPForward runs x [rows, In] through m and returns the output
// [rows, Out], which lives in s until its next use.
func MLPForward(m *MLP, x []float32, rows int, s *Scratch) ([]float32, error) {
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("models: MLP has no layers")
	}
	if len(x) != rows*m.Layers[0].In {
		return nil, fmt.Errorf("models: MLP input has %d values, want %d", len(x), rows*m.Layers[0].In)
	}
	cur := x
	for i := range m.Layers {
		l := &m.Layers[i]
		y := s.get(100+i%2, rows*l.Out)
		linearInto(l, cur, rows, y)
		if i+1 < len(m.Layers) {
			switch m.Activation {
			case "swish":
				ops.SwishInPlace(y)
			case "relu":
				for j, v := range y {
					y[j] = float32(math.Max(float64(v), 0))
				}
			case "", "identity":
			default:
				return nil, fmt.Errorf("models: unknown activation %q", m.Activation)
			}
		}
		cur = y
	}
	return cur, nil
}

// PredictMember runs ensemble member i on rows of raw obs [rows·ObsDim] and
// act [rows·ActDim], writing mean and soft-clamped logvar [rows·(ObsDim+1)].
// s may be nil.
func (e *Ensemble) PredictMember(i int, obs, act []float32, mean, logvar []float32, s *Scratch) error {
	if i < 0 || i >= len(e.Members) {
		return fmt.Errorf("models: ensemble has no member %d", i)
	}
	if e.ObsDim <= 0 || len(obs)%e.ObsDim != 0 {
		return fmt.Errorf("models: ensemble predict: %d obs values for dim %d", len(obs), e.ObsDim)
	}
	rows := len(obs) / e.ObsDim
	d := e.ObsDim + 1
	if len(act) != rows*e.ActDim || len(mean) != rows*d || len(logvar) != rows*d {
		return fmt.Errorf("models: ensemble predict: %d rows but %d act, %d mean, %d logvar values", rows, len(act), len(mean), len(logvar))
	}
	if s == nil {
		s = &Scratch{}
	}
	x := s.get(0, rows*(e.ObsDim+e.ActDim))
	e.Norm.normalizeInto(x, obs, act, e.ObsDim, e.ActDim, rows)
	o, err := MLPForward(&e.Members[i], x, rows, s)
	if err != nil {
		return fmt.Errorf("models: ensemble member %d: %w", i, err)
	}
	if len(o) != rows*2*d {
		return fmt.Errorf("models: ensemble member %d outputs %d values per row, want %d", i, len(o)/rows, 2*d)
	}
	splitGaussian(o, rows, d, &e.Bounds[i], mean, logvar)
	return nil
}
