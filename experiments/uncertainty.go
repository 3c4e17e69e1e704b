package experiments

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/models"
)

// UPoint is one model roll-out step with its uncertainty and its true
// one-step error.
type UPoint struct {
	Model, Policy string
	Step          int     // roll-out step (0-based)
	U             float64 // U^ADM, or MOPO's max-std for the ensemble
	// UVar is the paper's Definition of U^ADM: the L1 norm of the variance
	// of the next state under the mixture of the k = 1..m Gaussians,
	// ||mean_k(Σ_k² + μ_k²) - μ̄²||_1; for the ensemble the same over its
	// members' Gaussians.
	UVar     float64
	Err      float64 // ||mean prediction - true next observation||_2
	ErrDrawn float64 // the same for the component the roll-out drew (k or elite)
}

// URollStats counts a roll-out's steps.
type URollStats struct {
	Steps   int // model steps taken
	Skipped int // steps whose state could not be restored (clipped velocity)
	Warned  int // steps the simulator flagged (NaN/Inf/huge values): no true next state
	Ended   int // rows ended by the task's termination rule or a non-finite state
}

// uModel is one dynamics model in the uncertainty study: for the alive
// rows it returns the mean prediction, the roll-out's drawn component
// (mean and log-variance of the state dims) and the uncertainty.
type uModel interface {
	name() string
	window() int
	predict(h *window.Window, rows []int, rng *rand.Rand) (p uPred, err error)
}

// uPred is a model's prediction for the alive rows.
type uPred struct {
	mean, drawn, drawnLV []float32 // [n·od], [n·od], [n·(od+1)]
	u, uVar              []float64 // [n]
}

// mixtureVarL1 is ||mean_j(σ_j² + μ_j²) - (mean_j μ_j)²||_1 over the state
// dims for Gaussians with means mus[j] and log-variances lvs[j] (the first
// len(mus[j]) entries of each are used).
func mixtureVarL1(mus, lvs [][]float32) float64 {
	k := float64(len(mus))
	var total float64
	for d := range mus[0] {
		var m1, m2 float64
		for j := range mus {
			mu := float64(mus[j][d])
			m1 += mu
			m2 += math.Exp(float64(lvs[j][d])) + mu*mu
		}
		m1 /= k
		total += math.Abs(m2/k - m1*m1)
	}
	return total
}

// admU is the ADM: for every row all k = 1..min(states, m) predictions are
// made; U^ADM is their spread (admSpread), the mean prediction is their
// average (the mixture mean over a uniform k), and the roll-out continues
// from a uniformly drawn k (ADM-Roll).
type admU struct {
	m  *models.ADM
	st *models.ADMState
}

func (a *admU) name() string { return "ADM" }
func (a *admU) window() int  { return a.m.Cfg.M }

func (a *admU) predict(h *window.Window, rows []int, rng *rand.Rand) (uPred, error) {
	od, d := h.ObsDim, h.ObsDim+1
	n := len(rows)
	maxL := 0
	for _, r := range rows {
		maxL = max(maxL, h.Len[r])
	}
	perK := make([][]float32, maxL+1) // perK[k][q*od:]: rows with l >= k
	perLV := make([][]float32, maxL+1)
	pos := make([][]int, maxL+1) // position of row q in perK[k]
	for k := 1; k <= maxL; k++ {
		var sub []int
		pos[k] = make([]int, n)
		for q, r := range rows {
			pos[k][q] = -1
			if h.Len[r] >= k {
				pos[k][q] = len(sub)
				sub = append(sub, r)
			}
		}
		perK[k] = make([]float32, len(sub)*od)
		perLV[k] = make([]float32, len(sub)*d)
		if err := admPredictK(a.m, &a.st, h, sub, k, perK[k], perLV[k]); err != nil {
			return uPred{}, err
		}
	}
	mean := make([]float32, n*od)
	drawn := make([]float32, n*od)
	drawnLV := make([]float32, n*d)
	u, uVar := make([]float64, n), make([]float64, n)
	for q, r := range rows {
		l := h.Len[r]
		preds := make([][]float32, 0, l)
		lvs := make([][]float32, 0, l)
		for k := 1; k <= l; k++ {
			p := pos[k][q]
			preds = append(preds, perK[k][p*od:(p+1)*od])
			lvs = append(lvs, perLV[k][p*d:(p+1)*d])
		}
		u[q] = admSpread(preds, od)
		uVar[q] = mixtureVarL1(preds, lvs)
		for i := 0; i < od; i++ {
			var s float64
			for _, p := range preds {
				s += float64(p[i])
			}
			mean[q*od+i] = float32(s / float64(l))
		}
		k := 1 + rng.Intn(l)
		p := pos[k][q]
		copy(drawn[q*od:(q+1)*od], perK[k][p*od:(p+1)*od])
		copy(drawnLV[q*d:(q+1)*d], perLV[k][p*d:(p+1)*d])
	}
	return uPred{mean: mean, drawn: drawn, drawnLV: drawnLV, u: u, uVar: uVar}, nil
}

// ensembleU is the ensemble: U is MOPO's max over all members of the norm
// of the predicted std (reward included, as infer's penalty), the mean
// prediction is the elites' average, and the roll-out continues from a
// uniformly drawn elite.
type ensembleU struct {
	e *models.Ensemble
	s models.Scratch
}

func (e *ensembleU) name() string { return "ensemble" }
func (e *ensembleU) window() int  { return 1 }

func (e *ensembleU) predict(h *window.Window, rows []int, rng *rand.Rand) (uPred, error) {
	od, d := h.ObsDim, h.ObsDim+1
	n := len(rows)
	if len(e.e.Elites) == 0 {
		return uPred{}, fmt.Errorf("experiments: the ensemble has no elites")
	}
	means, lvs, err := ensemblePredictAll(e.e, h, rows, &e.s)
	if err != nil {
		return uPred{}, err
	}
	mean := make([]float32, n*od)
	drawn := make([]float32, n*od)
	drawnLV := make([]float32, n*d)
	u, uVar := make([]float64, n), make([]float64, n)
	rowMus, rowLVs := make([][]float32, len(means)), make([][]float32, len(means))
	for q := 0; q < n; q++ {
		u[q] = mopoMaxStd(lvs, q, d)
		for i := range means {
			rowMus[i], rowLVs[i] = means[i][q*od:(q+1)*od], lvs[i][q*d:(q+1)*d]
		}
		uVar[q] = mixtureVarL1(rowMus, rowLVs)
		for i := 0; i < od; i++ {
			var s float64
			for _, el := range e.e.Elites {
				s += float64(means[el][q*od+i])
			}
			mean[q*od+i] = float32(s / float64(len(e.e.Elites)))
		}
		el := e.e.Elites[rng.Intn(len(e.e.Elites))]
		copy(drawn[q*od:(q+1)*od], means[el][q*od:(q+1)*od])
		copy(drawnLV[q*d:(q+1)*d], lvs[el][q*d:(q+1)*d])
	}
	return uPred{mean: mean, drawn: drawn, drawnLV: drawnLV, u: u, uVar: uVar}, nil
}

// uncertaintyRollout rolls actor out in the model from the start sequences
// for horizon steps. Every step the next state is sampled from the drawn
// component's Gaussian (the model's roll-out rule) and the row ends when the
// task's termination rule fires on it. For every step whose state can be
// restored in the simulator, the true next observation is computed and the
// step recorded with its uncertainty and errors.
func uncertaintyRollout(mdl uModel, actor BatchActor, start *infer.Start, horizon int, ts *TrueStepper, task *envs.Task,
	rng *rand.Rand) ([]UPoint, URollStats, error) {
	var st URollStats
	od, ad := task.ObsDim, task.ActDim
	win := mdl.window()
	h := window.New(start.N, win, od, ad)
	for i := 0; i < start.N; i++ {
		var states, acts [][]float32
		for j := 0; j < start.Len[i]; j++ {
			states = append(states, start.Obs[(i*start.M+j)*od:(i*start.M+j+1)*od])
			if j < start.Len[i]-1 {
				acts = append(acts, start.Act[(i*(start.M-1)+j)*ad:(i*(start.M-1)+j+1)*ad])
			}
		}
		h.Load(i, states, acts)
	}
	alive := make([]int, start.N)
	for i := range alive {
		alive[i] = i
	}
	var pts []UPoint
	next := make([]float32, od)
	for step := 0; step < horizon && len(alive) > 0; step++ {
		n := len(alive)
		obs := make([]float32, n*od)
		for q, r := range alive {
			copy(obs[q*od:], h.Current(r))
		}
		act := make([]float32, n*ad)
		if err := actor.Act(obs, rng, act); err != nil {
			return nil, st, fmt.Errorf("experiments: %s policy: %w", actor.Name(), err)
		}
		for q, r := range alive {
			h.SetAction(r, act[q*ad:(q+1)*ad])
		}
		pr, err := mdl.predict(h, alive, rng)
		if err != nil {
			return nil, st, err
		}
		mean, drawn, lv := pr.mean, pr.drawn, pr.drawnLV
		kept := alive[:0]
		for q, r := range alive {
			st.Steps++
			s := obs[q*od : (q+1)*od]
			if ts.Restorable(s) {
				truth, ok, err := ts.Step(s, act[q*ad:(q+1)*ad])
				if err != nil {
					return nil, st, err
				}
				if !ok {
					st.Warned++
				} else {
					pts = append(pts, UPoint{Model: mdl.name(), Policy: actor.Name(), Step: step, U: pr.u[q], UVar: pr.uVar[q],
						Err: l2To(mean[q*od:(q+1)*od], truth), ErrDrawn: l2To(drawn[q*od:(q+1)*od], truth)})
				}
			} else {
				st.Skipped++
			}
			for i := 0; i < od; i++ {
				next[i] = drawn[q*od+i] + float32(math.Exp(0.5*float64(lv[q*(od+1)+i]))*rng.NormFloat64())
			}
			if !stats.Finite(next) || task.Done(next) {
				st.Ended++
				continue
			}
			h.Push(r, next)
			kept = append(kept, r)
		}
		alive = kept
	}
	return pts, st, nil
}

func l2To(p []float32, truth []float64) float64 {
	var s float64
	for i, v := range p {
		e := float64(v) - truth[i]
		s += e * e
	}
	return math.Sqrt(s)
}
