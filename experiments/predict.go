package experiments

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/models"
)

// Plain-Go batched predictions of the three dynamics models from history
// windows. Outputs are absolute next states: the models predict
// [s' - s_start, r], and the start state is added back here.

// admPredictK predicts, for every listed row (all with at least k states),
// the next state with backtracking length k: the ADM reads the state k-1
// steps before the current one, repeated, with the k actions from there on.
// next receives the mean next state [len(rows)·od]; lv (may be nil) the
// log-variance of [next state, reward] [len(rows)·(od+1)].
func admPredictK(m *models.ADM, st **models.ADMState, h *window.Window, rows []int, k int, next, lv []float32) error {
	od, ad := h.ObsDim, h.ActDim
	n := len(rows)
	if n == 0 {
		return nil
	}
	if *st == nil || (*st).Batch != n {
		*st = m.NewState(n)
	}
	s := *st
	s.Reset()
	start := make([]float32, n*od)
	act := make([]float32, n*ad)
	for q, r := range rows {
		if h.Len[r] < k {
			return fmt.Errorf("experiments: row %d has %d states, backtracking %d", r, h.Len[r], k)
		}
		copy(start[q*od:], h.State(r, h.Len[r]-k))
	}
	for j := 0; j < k; j++ {
		for q, r := range rows {
			copy(act[q*ad:(q+1)*ad], h.Action(r, h.Len[r]-k+j))
		}
		if err := m.GRUStep(s, start, act); err != nil {
			return err
		}
	}
	lvar, err := headNext(m, s, start, next)
	if err != nil {
		return err
	}
	if lv != nil {
		copy(lv, lvar)
	}
	return nil
}

// headNext runs m's head on s and writes the mean next states of s's rows,
// base (the states the predictions start from) plus the predicted change,
// into next [rows·od]; it returns the log-variance of [next state, reward]
// [rows·(od+1)].
func headNext(m *models.ADM, s *models.ADMState, base, next []float32) ([]float32, error) {
	d := m.Cfg.ObsDim + 1
	mean := make([]float32, s.Batch*d)
	lvar := make([]float32, s.Batch*d)
	if err := m.Head(s, mean, lvar); err != nil {
		return nil, err
	}
	addDeltas(next, base, mean, s.Batch, m.Cfg.ObsDim)
	return lvar, nil
}

// addDeltas writes next = base + Δs for n rows: raw holds rows of the models'
// output [Δs, r] (od+1 columns), base and next rows of od.
func addDeltas(next, base, raw []float32, n, od int) {
	d := od + 1
	for q := 0; q < n; q++ {
		for i := 0; i < od; i++ {
			next[q*od+i] = base[q*od+i] + raw[q*d+i]
		}
	}
}

// rnnPredict is the bootstrapping RNN's prediction: the GRU reads every
// state of the window with the action taken in it (the real or predicted
// states themselves, not a repeated start state) and predicts the next
// state as the current state plus the last output's delta. Rows are grouped
// by window length.
func rnnPredict(m *models.ADM, h *window.Window, rows []int, next []float32) error {
	od, ad := h.ObsDim, h.ActDim
	groups := map[int][]int{} // window length -> positions in rows
	for q, r := range rows {
		groups[h.Len[r]] = append(groups[h.Len[r]], q)
	}
	for l, qs := range groups {
		n := len(qs)
		st := m.NewState(n)
		obs := make([]float32, n*od)
		act := make([]float32, n*ad)
		for j := 0; j < l; j++ {
			for g, q := range qs {
				copy(obs[g*od:(g+1)*od], h.State(rows[q], j))
				copy(act[g*ad:(g+1)*ad], h.Action(rows[q], j))
			}
			if err := m.GRUStep(st, obs, act); err != nil {
				return err
			}
		}
		pred := make([]float32, n*od)
		if _, err := headNext(m, st, obs, pred); err != nil { // obs holds the current states (j = l-1)
			return err
		}
		for g, q := range qs {
			copy(next[q*od:(q+1)*od], pred[g*od:(g+1)*od])
		}
	}
	return nil
}

// ensemblePredictAll runs every member on the rows' current states and
// actions: means[i] gets member i's mean next state [len(rows)·od] and
// lvs[i] its log-variance of [next state, reward] [len(rows)·(od+1)].
func ensemblePredictAll(e *models.Ensemble, h *window.Window, rows []int, s *models.Scratch) (means, lvs [][]float32, err error) {
	od, ad, d := h.ObsDim, h.ActDim, h.ObsDim+1
	n := len(rows)
	obs := make([]float32, n*od)
	act := make([]float32, n*ad)
	for q, r := range rows {
		copy(obs[q*od:], h.Current(r))
		copy(act[q*ad:], h.Action(r, h.Len[r]-1))
	}
	raw := make([]float32, n*d)
	for i := range e.Members {
		mean := make([]float32, n*od)
		lv := make([]float32, n*d)
		if err := e.PredictMember(i, obs, act, raw, lv, s); err != nil {
			return nil, nil, err
		}
		addDeltas(mean, obs, raw, n, od)
		means = append(means, mean)
		lvs = append(lvs, lv)
	}
	return means, lvs, nil
}

// mopoMaxStd is MOPO's uncertainty of one row: the largest, over members,
// Euclidean norm of the predicted standard deviation of [next state,
// reward] (infer's ensemble penalty). lvs[i] holds member i's log-variances
// of every row; q is the row.
func mopoMaxStd(lvs [][]float32, q, d int) float64 {
	var worst float64
	for _, lv := range lvs {
		var s float64
		for _, v := range lv[q*d : (q+1)*d] {
			s += math.Exp(float64(v))
		}
		worst = math.Max(worst, math.Sqrt(s))
	}
	return worst
}

// admSpread is U^ADM as admpo computes it (infer's roll-out penalty):
// sqrt(mean over dims of the population variance over k of the mean next
// states). preds holds kn rows of od values.
func admSpread(preds [][]float32, od int) float64 {
	kn := len(preds)
	if kn <= 1 {
		return 0
	}
	var total float64
	for d := 0; d < od; d++ {
		var s float64
		for _, p := range preds {
			s += float64(p[d])
		}
		mean := s / float64(kn)
		var v float64
		for _, p := range preds {
			e := float64(p[d]) - mean
			v += e * e
		}
		total += v / float64(kn)
	}
	return math.Sqrt(total / float64(od))
}
