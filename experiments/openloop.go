package experiments

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/models"
)

// Segment is a piece of a real trajectory for open-loop evaluation:
// States[0..Hist-1] are real states before the start (the history a model
// may backtrack into), States[Hist] is the start state and States[Hist+t]
// the real state after the t-th recorded action from the start.
// Acts[j] is the action taken in States[j]; len(Acts) = len(States)-1.
type Segment struct {
	States [][]float32
	Acts   [][]float32
	Hist   int
}

// Steps is the number of recorded steps after the start.
func (s Segment) Steps() int { return len(s.States) - 1 - s.Hist }

// Rule is a dynamics model together with its open-loop roll-out rule:
// given each row's history window (its current state last, the action to
// take set), it writes the predicted mean next state of every listed row.
type Rule interface {
	// Name labels the rule in tables and plots.
	Name() string
	// Window is how many states of history the rule reads (at least 1).
	Window() int
	next(h *window.Window, rows []int, rng *rand.Rand, out []float32) error
}

// anyStep predicts the mean next state of rows with backtracking length k
// (every row has at least k states); the ADM and test models implement it.
type anyStep interface {
	predictK(h *window.Window, rows []int, k int, out []float32) error
}

// admAnyStep is the trained ADM as an anyStep predictor.
type admAnyStep struct {
	m  *models.ADM
	st *models.ADMState
}

func (a *admAnyStep) predictK(h *window.Window, rows []int, k int, out []float32) error {
	return admPredictK(a.m, &a.st, h, rows, k, out, nil)
}

// ADMRoll is the ADM with the paper's roll-out rule (ADM-Roll): at every
// step each row draws k uniformly from 1..min(states in its window, m) and
// predicts the next state from the state k-1 steps back (a real history
// state or an earlier prediction) with the k actions from there; the window
// keeps the last m states. With FixedK > 0 every step uses
// k = min(FixedK, states) instead (FixedK = 1: the ADM as a one-step model
// iterated on its own predictions).
type ADMRoll struct {
	P      anyStep
	M      int
	FixedK int
	Label  string
}

// NewADMRoll wraps a trained ADM; fixedK 0 draws k at random (ADM-Roll).
func NewADMRoll(m *models.ADM, fixedK int, label string) *ADMRoll {
	return &ADMRoll{P: &admAnyStep{m: m}, M: m.Cfg.M, FixedK: fixedK, Label: label}
}

// Name is the rule's label.
func (r *ADMRoll) Name() string { return r.Label }

// Window is m.
func (r *ADMRoll) Window() int { return r.M }

func (r *ADMRoll) next(h *window.Window, rows []int, rng *rand.Rand, out []float32) error {
	od := h.ObsDim
	byK := map[int][]int{} // k -> positions in rows
	for q, row := range rows {
		k := r.FixedK
		if k <= 0 {
			k = 1 + rng.Intn(h.Len[row])
		}
		k = min(k, h.Len[row])
		byK[k] = append(byK[k], q)
	}
	ks := make([]int, 0, len(byK))
	for k := range byK {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		qs := byK[k]
		sub := make([]int, len(qs))
		for i, q := range qs {
			sub[i] = rows[q]
		}
		pred := make([]float32, len(qs)*od)
		if err := r.P.predictK(h, sub, k, pred); err != nil {
			return err
		}
		for i, q := range qs {
			copy(out[q*od:(q+1)*od], pred[i*od:(i+1)*od])
		}
	}
	return nil
}

// BootstrapRNN is the bootstrapping RNN baseline (the ADM's network trained
// with dynamics.ADMFitConfig.Bootstrap): every step it reads the last up to m
// states of the window (real history, then its own predictions) with their
// actions and predicts the next state from the current one.
type BootstrapRNN struct {
	Model *models.ADM
	Label string
}

// Name is the rule's label.
func (b *BootstrapRNN) Name() string { return b.Label }

// Window is the training sequence length m.
func (b *BootstrapRNN) Window() int { return b.Model.Cfg.M }

func (b *BootstrapRNN) next(h *window.Window, rows []int, _ *rand.Rand, out []float32) error {
	return rnnPredict(b.Model, h, rows, out)
}

// EnsembleRoll is the probabilistic ensemble with MBPO/MOPO's roll-out
// rule: every step each row uses one elite member drawn uniformly.
type EnsembleRoll struct {
	Model *models.Ensemble
	Label string
	s     models.Scratch
}

// Name is the rule's label.
func (e *EnsembleRoll) Name() string { return e.Label }

// Window is 1: the ensemble is a one-step model.
func (e *EnsembleRoll) Window() int { return 1 }

func (e *EnsembleRoll) next(h *window.Window, rows []int, rng *rand.Rand, out []float32) error {
	if len(e.Model.Elites) == 0 {
		return fmt.Errorf("experiments: the ensemble has no elites")
	}
	means, _, err := ensemblePredictAll(e.Model, h, rows, &e.s)
	if err != nil {
		return err
	}
	od := h.ObsDim
	for q := range rows {
		mem := e.Model.Elites[rng.Intn(len(e.Model.Elites))]
		copy(out[q*od:(q+1)*od], means[mem][q*od:(q+1)*od])
	}
	return nil
}

// Curve is the open-loop error of one rule against the roll-out length.
// Errors are taken per segment as the mean squared error over the state
// dimensions (MSE) and as the Euclidean norm (L2). A prediction that is not
// finite in float32 overflows: its error, and every later one of that
// segment, counts as math.MaxFloat32, and so does the mean over segments at
// that length (as a float32 sum would overflow).
type Curve struct {
	Name      string
	H         []int     // 1..horizon
	MeanMSE   []float64 // mean over segments
	MedianMSE []float64
	MeanL2    []float64
	Overflow  []int // segments overflowed by this length
	Segments  int
}

// MaxFloat32 is what an overflowed error is shown as.
const MaxFloat32 = float64(math.MaxFloat32)

// OpenLoop rolls the rule out on every segment with the recorded actions
// for horizon steps (every segment must have that many) and measures the
// error of the predicted states against the real ones.
func OpenLoop(rule Rule, segs []Segment, horizon int, rng *rand.Rand) (Curve, error) {
	c := Curve{Name: rule.Name(), Segments: len(segs)}
	if len(segs) == 0 || horizon <= 0 {
		return c, fmt.Errorf("experiments: open loop needs segments (%d) and a positive horizon (%d)", len(segs), horizon)
	}
	od, ad := len(segs[0].States[0]), len(segs[0].Acts[0])
	win := max(rule.Window(), 1)
	h := window.New(len(segs), win, od, ad)
	for i, s := range segs {
		if s.Steps() < horizon {
			return c, fmt.Errorf("experiments: segment %d has %d steps, horizon %d", i, s.Steps(), horizon)
		}
		h.Load(i, s.States[:s.Hist+1], s.Acts[:s.Hist])
	}
	overflowed := make([]bool, len(segs))
	mse := make([]float64, len(segs))
	l2 := make([]float64, len(segs))
	pred := make([]float32, len(segs)*od)
	for t := 0; t < horizon; t++ {
		var rows []int
		for i, s := range segs {
			if !overflowed[i] {
				h.SetAction(i, s.Acts[s.Hist+t])
				rows = append(rows, i)
			}
		}
		if len(rows) > 0 {
			out := pred[:len(rows)*od]
			if err := rule.next(h, rows, rng, out); err != nil {
				return c, fmt.Errorf("experiments: %s at step %d: %w", rule.Name(), t+1, err)
			}
			for q, i := range rows {
				p := out[q*od : (q+1)*od]
				real := segs[i].States[segs[i].Hist+t+1]
				se, ok := sqError(p, real)
				if !ok {
					overflowed[i] = true
					continue
				}
				mse[i] = math.Min(se/float64(od), MaxFloat32)
				l2[i] = math.Min(math.Sqrt(se), MaxFloat32)
				h.Push(i, p)
			}
		}
		var sm, sl float64
		nOver := 0
		for i := range segs {
			if overflowed[i] {
				mse[i], l2[i] = MaxFloat32, MaxFloat32
				nOver++
			}
			sm += mse[i]
			sl += l2[i]
		}
		n := float64(len(segs))
		meanMSE, meanL2 := math.Min(sm/n, MaxFloat32), math.Min(sl/n, MaxFloat32)
		if nOver > 0 {
			meanMSE, meanL2 = MaxFloat32, MaxFloat32
		}
		c.H = append(c.H, t+1)
		c.MeanMSE = append(c.MeanMSE, meanMSE)
		c.MeanL2 = append(c.MeanL2, meanL2)
		c.MedianMSE = append(c.MedianMSE, median(mse))
		c.Overflow = append(c.Overflow, nOver)
	}
	return c, nil
}

// sqError is the squared Euclidean distance; ok is false when the
// prediction is not finite in float32.
func sqError(pred, real []float32) (float64, bool) {
	var se float64
	for j, v := range pred {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		e := f - float64(real[j])
		se += e * e
	}
	return se, !math.IsInf(se, 0)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
