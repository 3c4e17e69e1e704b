package policies

import (
	"fmt"
	"math"
	"sync"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/scratch"
	"github.com/admpo/admpo/internal/stats"
)

// Monitor measures U^ADM, the ADM's disagreement with itself about the next
// state: for the last l = min(len, m) observations s_1..s_l and actions
// a_1..a_l (a_l taken at the current state s_l), the ADM predicts the mean
// next state from each start s_{l-k+1} with the plan a_{l-k+1..l},
// k = 1..l; U^ADM = sqrt(mean over obs dims of the population variance
// over k of those predictions). It is safe for concurrent use.
//
// U^ADM alone cannot flag inputs far outside the training data: the
// ADM's predictions saturate there and agree, so U^ADM falls towards 0.
// When the calibration records the data's range, the monitor also checks
// the history it uses (observations against that range, actions against
// the manifest's action bounds) and scores a value outside as out of
// distribution: Reading.OutOfRange, and percentile 100.
type Monitor struct {
	mu           sync.Mutex
	adm          *infer.ADMDirect
	m            int
	od, ad       int
	cal          *Calibration
	actLo, actHi []float64
	closed       bool

	obs, acts, next, rew, lv []float32
	lens                     []int32
}

// Reading is one U^ADM measurement.
type Reading struct {
	U float64 `json:"u"`
	// K is the number of plans compared (min(history, m)); U is 0 when 1.
	K int `json:"k"`
	// Percentile is U's place in the manifest's calibration (0..100), 100
	// when OutOfRange; meaningful only when Calibrated.
	Percentile float64 `json:"percentile"`
	Calibrated bool    `json:"calibrated"`
	// RangeChecked tells whether the calibration records the data's range
	// (bundles exported before 2026-11-27 do not); the fields below are
	// meaningful only then.
	RangeChecked bool `json:"range_checked"`
	// OutOfRange is set when a value of the history used lies outside the
	// calibrated range: an observation value outside the calibration
	// data's, an action value outside the action bounds.
	OutOfRange bool `json:"out_of_range"`
	// Excess is how far the furthest such value lies outside, in units of
	// its dimension's range width (0 when none does); Where names it.
	Excess float64 `json:"excess"`
	Where  string  `json:"where,omitempty"`
}

func newMonitor(model []byte, m *Manifest, opts Options) (*Monitor, error) {
	e, err := infer.OpenADMDirect(model, infer.Options{Provider: opts.Provider, Threads: opts.threads()})
	if err != nil {
		return nil, fmt.Errorf("policies: loading %s: %w", ADMFile, err)
	}
	if e.M() != m.M {
		e.Close()
		return nil, fmt.Errorf("policies: %s has m=%d, the manifest m=%d", ADMFile, e.M(), m.M)
	}
	return &Monitor{adm: e, m: m.M, od: m.ObsDim, ad: m.ActDim, cal: m.Calibration, actLo: m.ActLow, actHi: m.ActHigh}, nil
}

// M is the longest history the monitor uses.
func (mo *Monitor) M() int { return mo.m }

// Calibration is the manifest's U^ADM calibration (nil when absent).
func (mo *Monitor) Calibration() *Calibration { return mo.cal }

// Uncertainty computes U^ADM from the recent history: obs [l, ObsDim] and
// acts [l, ActDim] row-major, oldest first, the last action being the one
// just chosen at the last observation. Only the last min(l, m) rows are
// used.
func (mo *Monitor) Uncertainty(obs, acts []float32) (Reading, error) {
	od, ad := mo.od, mo.ad
	if len(obs) == 0 || len(obs)%od != 0 || len(acts)%ad != 0 || len(obs)/od != len(acts)/ad {
		return Reading{}, fmt.Errorf("policies: monitor history: %d observation and %d action values are not l rows of %d and %d (l >= 1)",
			len(obs), len(acts), od, ad)
	}
	if !stats.Finite(obs) || !stats.Finite(acts) {
		return Reading{}, fmt.Errorf("policies: monitor history holds a NaN or Inf")
	}
	l := len(obs) / od
	if l > mo.m {
		obs, acts = obs[(l-mo.m)*od:], acts[(l-mo.m)*ad:]
		l = mo.m
	}
	r := Reading{K: l}
	mo.checkRange(&r, obs, acts, l)
	if l > 1 {
		u, err := mo.uadm(obs, acts, l)
		if err != nil {
			return Reading{}, err
		}
		if math.IsNaN(u) || math.IsInf(u, 0) {
			why := "it is probably far outside the training data"
			if r.OutOfRange {
				why = fmt.Sprintf("its %s lies outside the calibrated range by %.3g times the range's width", r.Where, r.Excess)
			}
			return Reading{}, fmt.Errorf("policies: %w: U^ADM is %v for this history of finite values (%s)", ErrNonFinite, u, why)
		}
		r.U = u
	}
	if mo.cal != nil {
		r.Percentile, r.Calibrated = mo.cal.Percentile(r.U), true
		if r.OutOfRange {
			r.Percentile = 100
		}
	}
	return r, nil
}

// checkRange sets r's range fields for the l rows of obs and acts that
// U^ADM uses (the last being the current step).
func (mo *Monitor) checkRange(r *Reading, obs, acts []float32, l int) {
	if mo.cal == nil || mo.cal.Range == nil {
		return
	}
	r.RangeChecked = true
	rg, od, ad := mo.cal.Range, mo.od, mo.ad
	worst := func(e float64, what string, row, j int) {
		if e > r.Excess {
			step := fmt.Sprintf("step %d of the last %d", row+1, l)
			if row == l-1 {
				step = "the current step"
			}
			r.Excess, r.Where = e, fmt.Sprintf("%s value %d at %s", what, j, step)
		}
	}
	for row := range l {
		for j, x := range obs[row*od : (row+1)*od] {
			worst(excess(float64(x), rg.ObsLow[j], rg.ObsHigh[j]), "observation", row, j)
		}
		for j, x := range acts[row*ad : (row+1)*ad] {
			worst(excess(float64(x), mo.actLo[j], mo.actHi[j]), "action", row, j)
		}
	}
	r.OutOfRange = r.Excess > 0
}

// uadm evaluates the l plans in one ADM batch: plan k (row k-1) starts at
// state l-k and takes actions l-k..l-1.
func (mo *Monitor) uadm(obs, acts []float32, l int) (float64, error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.closed {
		return 0, ErrClosed
	}
	od, ad, m := mo.od, mo.ad, mo.m
	mo.obs = scratch.Resize(mo.obs, l*od)
	mo.acts = scratch.Resize(mo.acts, m*l*ad)
	clear(mo.acts)
	mo.next = scratch.Resize(mo.next, l*od)
	mo.rew = scratch.Resize(mo.rew, l)
	mo.lv = scratch.Resize(mo.lv, l*(od+1))
	mo.lens = scratch.Resize(mo.lens, l)
	for k := 1; k <= l; k++ {
		i, s := k-1, l-k
		copy(mo.obs[i*od:(i+1)*od], obs[s*od:(s+1)*od])
		for j := 0; j < k; j++ { // step j of the plan, sequence-first [m, l, ad]
			copy(mo.acts[(j*l+i)*ad:(j*l+i+1)*ad], acts[(s+j)*ad:(s+j+1)*ad])
		}
		mo.lens[i] = int32(k)
	}
	if err := mo.adm.Predict(mo.obs, mo.acts, mo.lens, mo.next, mo.rew, mo.lv); err != nil {
		return 0, fmt.Errorf("policies: monitor: %w", err)
	}
	return infer.UADM(mo.next, l, od), nil
}

func (mo *Monitor) close() {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	mo.closed = true
	mo.adm.Close()
}
