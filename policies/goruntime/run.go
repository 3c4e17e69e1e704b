package goruntime

import (
	"fmt"
	"math"

	blasgonum "gonum.org/v1/gonum/blas/gonum"

	"gonum.org/v1/gonum/blas"
)

// pureBLAS is gonum's pure-Go BLAS implementation.
var pureBLAS blasgonum.Implementation

// chunkRows is the most rows a Program runs at once: larger batches run in
// chunks, which bounds the scratch buffers.
const chunkRows = 128

// scratch holds one runner's buffers for a Program: it must not be
// used by two goroutines at once.
type scratch struct {
	rows int         // capacity of the buffers, in rows
	buf  [][]float32 // per value: the kernel output buffer (nil for inputs and constants)
	data [][]float32 // per value: this chunk's rows
	zero []float32
}

func (p *Program) newScratch() *scratch {
	s := &scratch{
		buf:  make([][]float32, len(p.values)),
		data: make([][]float32, len(p.values)),
	}
	s.grow(p, 1)
	return s
}

// grow makes the buffers hold at least rows rows.
func (s *scratch) grow(p *Program, rows int) {
	if rows <= s.rows {
		return
	}
	maxW := 0
	for i, v := range p.values {
		if v.input < 0 && v.konst == nil {
			s.buf[i] = make([]float32, rows*v.width)
		}
	}
	for _, in := range p.inputs {
		maxW = max(maxW, in.Width)
	}
	s.zero = make([]float32, rows*maxW)
	s.rows = rows
}

// run computes plan pl for the rows in ins (one slice per program input;
// every one holds the same number of rows, or is nil for zeros) and writes
// them to out.
func (p *Program) run(s *scratch, pl *plan, ins [][]float32, out []float32) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("goruntime: computing %q: panic: %v", pl.name, r)
		}
	}()
	rows := -1
	for i, in := range p.inputs {
		if !pl.needs[i] || ins[i] == nil {
			continue
		}
		if len(ins[i])%in.Width != 0 || (rows >= 0 && len(ins[i]) != rows*in.Width) {
			return fmt.Errorf("goruntime: input %q has %d values, not the same number of rows of %d as the other inputs", in.Name, len(ins[i]), in.Width)
		}
		rows = len(ins[i]) / in.Width
	}
	ow := p.values[pl.value].width
	if rows < 0 {
		rows = len(out) / ow
	}
	if len(out) != rows*ow {
		return fmt.Errorf("goruntime: %q needs room for %d values, the output has %d", pl.name, rows*ow, len(out))
	}
	for lo := 0; lo < rows; lo += chunkRows {
		r := min(chunkRows, rows-lo)
		s.grow(p, r)
		for i, in := range p.inputs {
			v := p.inVals[i]
			switch {
			case !pl.needs[i]:
				s.data[v] = nil
			case ins[i] == nil:
				s.data[v] = s.zero[:r*in.Width]
			default:
				s.data[v] = ins[i][lo*in.Width : (lo+r)*in.Width]
			}
		}
		for i, v := range p.values {
			switch {
			case v.konst != nil:
				s.data[i] = v.konst
			case v.input < 0:
				s.data[i] = s.buf[i][:r*v.width]
			}
		}
		for _, si := range pl.steps {
			p.steps[si].exec(s, r)
		}
		copy(out[lo*ow:(lo+r)*ow], s.data[pl.value])
	}
	return nil
}

// exec runs the kernel on r rows.
func (st *step) exec(s *scratch, r int) {
	x, y := s.data[st.a], s.data[st.y]
	switch st.kind {
	case kernelGemm:
		st.gemm(x, y, r)
	case kernelRelu:
		for i, v := range x {
			y[i] = max(v, 0)
		}
	case kernelTanh:
		for i, v := range x {
			y[i] = float32(math.Tanh(float64(v)))
		}
	case kernelExp:
		for i, v := range x {
			y[i] = float32(math.Exp(float64(v)))
		}
	case kernelSigmoid:
		for i, v := range x {
			y[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	case kernelAdd, kernelMul:
		b := s.data[st.b]
		w := len(y) / r
		switch {
		case len(b) == 1 && st.kind == kernelAdd:
			for i, v := range x {
				y[i] = v + b[0]
			}
		case len(b) == 1:
			for i, v := range x {
				y[i] = v * b[0]
			}
		case len(b) == len(y) && st.kind == kernelAdd:
			for i, v := range x {
				y[i] = v + b[i]
			}
		case len(b) == len(y):
			for i, v := range x {
				y[i] = v * b[i]
			}
		case st.kind == kernelAdd: // a constant row, r > 1
			for o := 0; o < len(y); o += w {
				yr, xr := y[o:o+w], x[o:o+w]
				for j, v := range b[:w] {
					yr[j] = xr[j] + v
				}
			}
		default:
			for o := 0; o < len(y); o += w {
				yr, xr := y[o:o+w], x[o:o+w]
				for j, v := range b[:w] {
					yr[j] = xr[j] * v
				}
			}
		}
	}
}

// gemm computes y [r, n] = x [r, k]·W + bias (then Relu when fused).
func (st *step) gemm(x, y []float32, r int) {
	k, n := st.k, st.n
	var beta float32
	if st.bias != nil {
		for o := 0; o < len(y); o += n {
			copy(y[o:o+n], st.bias)
		}
		beta = 1
	} else if r == 1 && !st.wT {
		clear(y)
	}
	switch {
	case r == 1 && st.wT:
		pureBLAS.Sgemv(blas.NoTrans, n, k, 1, st.w, k, x, 1, beta, y, 1)
	case r == 1:
		for i, v := range x {
			if v != 0 {
				pureBLAS.Saxpy(n, v, st.w[i*n:(i+1)*n], 1, y, 1)
			}
		}
	case st.wT:
		pureBLAS.Sgemm(blas.NoTrans, blas.Trans, r, n, k, 1, x, k, st.w, k, beta, y, n)
	default:
		pureBLAS.Sgemm(blas.NoTrans, blas.NoTrans, r, n, k, 1, x, k, st.w, n, beta, y, n)
	}
	if st.relu {
		for i, v := range y {
			y[i] = max(v, 0)
		}
	}
}

// OutputWidth returns the row width of output i (in the order Compile was
// given).
func (p *Program) OutputWidth(i int) int { return p.values[p.plans[i].value].width }

// Runner runs a Program with its own buffers. It is not safe for
// concurrent use; Runners of one Program may run at once.
type Runner struct {
	prog *Program
	s    *scratch
}

// NewRunner returns a Runner of p.
func (p *Program) NewRunner() *Runner { return &Runner{prog: p, s: p.newScratch()} }

// Run computes output i (in the order Compile was given) for the rows in
// inputs, one slice per input in Compile's order: each holds the same
// number of rows, or is nil for zeros (an input output i does not read may
// be nil or of any length). It writes the rows to out, which must have
// room for exactly their number times OutputWidth(i).
func (r *Runner) Run(i int, inputs [][]float32, out []float32) error {
	if i < 0 || i >= len(r.prog.plans) {
		return fmt.Errorf("goruntime: output %d of %d", i, len(r.prog.plans))
	}
	if len(inputs) != len(r.prog.inputs) {
		return fmt.Errorf("goruntime: %d inputs given, the program has %d", len(inputs), len(r.prog.inputs))
	}
	return r.prog.run(r.s, &r.prog.plans[i], inputs, out)
}
