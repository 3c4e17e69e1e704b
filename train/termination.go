package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/internal/stats"
)

// TerminationModel is a termination rule learned from a data set's
// terminals, for data without a task (--termination learned): logistic
// regression on the standardised next observation z and its squares,
//
//	p(done | s') = sigmoid(B + W[:n]·z + W[n:]·z²),  z = (s' - Mean) / Std,
//
// so that bands such as |angle| < 0.2 or z > 0.7 are representable. A
// next observation is terminal when p > 0.5 or when it is not finite.
type TerminationModel struct {
	Mean []float64 `json:"mean"`
	Std  []float64 `json:"std"`
	W    []float64 `json:"weights"` // linear then squared terms
	B    float64   `json:"bias"`

	Rows      int     `json:"rows"`      // next observations fitted on
	Terminals int     `json:"terminals"` // of them terminal
	Accuracy  float64 `json:"accuracy"`  // on the data set's rows
	Recall    float64 `json:"recall"`    // of its terminals
}

// termMaxNegatives caps the non-terminal rows of a fit: beyond it they are
// taken at a fixed stride and weighted by it, so a 1M-row data set fits in
// seconds with an unbiased loss.
const termMaxNegatives = 100000

// FitTermination fits a TerminationModel on the next observations and
// terminal flags of d by Newton's method on the L2-regularised
// (lambda = 1e-3 per unit of weight) log-loss. Deterministic. It fails when
// the data set has no terminal rows.
func FitTermination(d *datasets.Dataset) (*TerminationModel, error) {
	od := d.ObsDim
	var pos, neg []int
	for i := 0; i < d.N; i++ {
		if d.Terminal[i] {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	if len(pos) == 0 {
		return nil, fmt.Errorf("train: the data set has no terminals to learn a termination rule from (use --termination none)")
	}
	if len(neg) == 0 {
		return nil, fmt.Errorf("train: every row of the data set is terminal: no termination rule to learn")
	}
	m := &TerminationModel{Mean: make([]float64, od), Std: make([]float64, od), W: make([]float64, 2*od),
		Rows: d.N, Terminals: len(pos)}
	for i := 0; i < d.N; i++ {
		for j, v := range d.NextObs[i*od : (i+1)*od] {
			m.Mean[j] += float64(v)
		}
	}
	for j := range m.Mean {
		m.Mean[j] /= float64(d.N)
	}
	for i := 0; i < d.N; i++ {
		for j, v := range d.NextObs[i*od : (i+1)*od] {
			m.Std[j] += (float64(v) - m.Mean[j]) * (float64(v) - m.Mean[j])
		}
	}
	for j := range m.Std {
		m.Std[j] = math.Sqrt(m.Std[j] / float64(d.N))
		if m.Std[j] < 1e-6 {
			m.Std[j] = 1
		}
	}
	// Rows fitted: every terminal, the non-terminals at a stride, weighted.
	stride := max(1, (len(neg)+termMaxNegatives-1)/termMaxNegatives)
	type row struct {
		x    []float64 // features, bias last
		y, w float64
	}
	nf := 2*od + 1
	var rows []row
	add := func(i int, y, w float64) {
		x := make([]float64, nf)
		m.features(d.NextObs[i*od:(i+1)*od], x)
		x[nf-1] = 1
		rows = append(rows, row{x, y, w})
	}
	for _, i := range pos {
		add(i, 1, 1)
	}
	for k := 0; k < len(neg); k += stride {
		add(neg[k], 0, float64(stride))
	}
	const lambda = 1e-3
	theta := make([]float64, nf)
	loss := func(th []float64) float64 {
		var l float64
		for _, r := range rows {
			u := dot(th, r.x)
			// log(1 + e^u) - y*u, computed stably
			l += r.w * (math.Max(u, 0) + math.Log1p(math.Exp(-math.Abs(u))) - r.y*u)
		}
		return l + 0.5*lambda*dot(th[:nf-1], th[:nf-1])
	}
	cur := loss(theta)
	hs := make([]float64, nf*nf)
	gs := make([]float64, nf)
	for it := 0; it < 100; it++ {
		clear(hs)
		clear(gs)
		for _, r := range rows {
			p := sigmoid(dot(theta, r.x))
			c := r.w * math.Max(p*(1-p), 1e-12)
			for a, xa := range r.x {
				gs[a] += r.w * (p - r.y) * xa
				row := hs[a*nf:]
				for b := a; b < nf; b++ {
					row[b] += c * xa * r.x[b]
				}
			}
		}
		for a := 0; a < nf-1; a++ {
			gs[a] += lambda * theta[a]
			hs[a*nf+a] += lambda
		}
		hs[nf*nf-1] += 1e-9
		for a := 0; a < nf; a++ {
			for b := 0; b < a; b++ {
				hs[a*nf+b] = hs[b*nf+a]
			}
		}
		h, g := mat.NewSymDense(nf, hs), mat.NewVecDense(nf, gs)
		var step mat.VecDense
		var ch mat.Cholesky
		if !ch.Factorize(h) {
			return nil, fmt.Errorf("train: termination fit: singular Hessian at iteration %d", it)
		}
		if err := ch.SolveVecTo(&step, g); err != nil {
			return nil, fmt.Errorf("train: termination fit: %w", err)
		}
		// Damped Newton: halve the step until the loss does not grow.
		next := make([]float64, nf)
		improved := false
		for t := 1.0; t > 1e-6; t /= 2 {
			for a := range next {
				next[a] = theta[a] - t*step.AtVec(a)
			}
			if l := loss(next); l <= cur {
				improved = cur-l > 1e-10*math.Max(1, cur)
				theta, cur = next, l
				break
			}
		}
		if !improved {
			break
		}
	}
	copy(m.W, theta[:nf-1])
	m.B = theta[nf-1]
	var right, hit float64
	for i := 0; i < d.N; i++ {
		done := m.Done(d.NextObs[i*od : (i+1)*od])
		if done == d.Terminal[i] {
			right++
		}
		if done && d.Terminal[i] {
			hit++
		}
	}
	m.Accuracy, m.Recall = right/float64(d.N), hit/float64(len(pos))
	return m, nil
}

// features writes z and z² of one observation into x[:2n].
func (m *TerminationModel) features(obs []float32, x []float64) {
	n := len(m.Mean)
	for j := 0; j < n; j++ {
		z := (float64(obs[j]) - m.Mean[j]) / m.Std[j]
		x[j], x[n+j] = z, z*z
	}
}

// Prob is the probability that the next observation obs ends the episode.
func (m *TerminationModel) Prob(obs []float32) float64 {
	n := len(m.Mean)
	u := m.B
	for j := 0; j < n; j++ {
		z := (float64(obs[j]) - m.Mean[j]) / m.Std[j]
		u += m.W[j]*z + m.W[n+j]*z*z
	}
	return sigmoid(u)
}

// Done reports whether obs ends the episode: p > 0.5, or a value that is
// not finite.
func (m *TerminationModel) Done(obs []float32) bool {
	if !stats.Finite(obs) {
		return true
	}
	return m.Prob(obs) > 0.5
}

// check verifies a model read from a config against the observation width.
func (m *TerminationModel) check(obsDim int) error {
	if len(m.Mean) != obsDim || len(m.Std) != obsDim || len(m.W) != 2*obsDim {
		return fmt.Errorf("termination model has %d/%d/%d values for %d observation values", len(m.Mean), len(m.Std), len(m.W), obsDim)
	}
	for _, s := range m.Std {
		if !(s > 0) {
			return fmt.Errorf("termination model has a non-positive std %v", s)
		}
	}
	return nil
}

func sigmoid(u float64) float64 { return 1 / (1 + math.Exp(-u)) }

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
