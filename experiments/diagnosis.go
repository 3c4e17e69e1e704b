package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// Diagnosis measures how well a finished offline run's model and penalty
// track the true dynamics where its final policy goes: the policy is rolled
// out in the model from data set start sequences (as in training), and every
// model transition (s, a, s') is replayed in the real simulator from s (the
// simulator state is rebuilt from the observation: the x position it leaves
// out does not affect these tasks' dynamics), giving the true next state and
// reward. Error is the RMS over dimensions of s'_model - s'_real (the
// sampled model state the agent learns from); U is the run's uncertainty
// (U^ADM or MOPO's max-std) before beta.
type Diagnosis struct {
	Run         string `json:"run"`
	Algo        string `json:"algo"`
	Policy      string `json:"policy"` // the policy rolled out: "own" or the ONNX file used instead
	Transitions int    `json:"transitions"`
	// SkippedClipped counts transitions left out because their state has a
	// velocity at the observation's clip bound (hopper, walker2d: ±10).
	SkippedClipped int        `json:"skipped_clipped"`
	Penalty        float64    `json:"penalty"`
	PerStep        []DiagStep `json:"per_step"` // by roll-out step h = 1..H
	PerK           []DiagK    `json:"per_k"`    // by backtracking length k = 1..m (only 1 for the ensemble)
	// OneStep is the transitions at h = 1 predicted with k = 1: one model
	// step from a data set state, the like-for-like model error of ADM-Roll
	// and the ensemble (at h = 1 ADM-Roll also backtracks into the start's
	// real history, which mixes k-step predictions into PerStep[0]).
	OneStep     DiagStats   `json:"one_step"`
	Corr        float64     `json:"corr_u_error"` // Pearson correlation of U and the error over all transitions
	RankCorr    float64     `json:"rank_corr_u_error"`
	ErrMean     float64     `json:"error_mean"`
	UMean       float64     `json:"u_mean"`
	RewErrMean  float64     `json:"reward_error_mean"` // |r_model (unpenalised) - r_real|
	DoneAgree   float64     `json:"done_agreement"`    // model and simulator agree on termination
	ByUQuintile []DiagGroup `json:"by_u_quintile"`     // error within each fifth of the transitions sorted by U
}

// DiagStats are the averages over a group of replayed transitions.
type DiagStats struct {
	Transitions int     `json:"transitions"`
	ErrMean     float64 `json:"error_mean"`
	UMean       float64 `json:"u_mean"`
	RewErrMean  float64 `json:"reward_error_mean"`
}

// add sums one transition's error, U and reward error (finish averages).
func (s *DiagStats) add(e, u, rewErr float64) {
	s.Transitions++
	s.ErrMean += e
	s.UMean += u
	s.RewErrMean += rewErr
}

// finish turns the sums into means.
func (s *DiagStats) finish() {
	if s.Transitions > 0 {
		c := float64(s.Transitions)
		s.ErrMean, s.UMean, s.RewErrMean = s.ErrMean/c, s.UMean/c, s.RewErrMean/c
	}
}

// DiagStep is one roll-out step's averages.
type DiagStep struct {
	H int `json:"h"`
	DiagStats
}

// DiagK is the averages of the transitions predicted with backtracking
// length K.
type DiagK struct {
	K int `json:"k"`
	DiagStats
}

// DiagGroup is the mean U and error of a group of transitions.
type DiagGroup struct {
	UMean, ErrMean float64
}

// DiagnoseOptions selects what DiagnoseOffline rolls out.
type DiagnoseOptions struct {
	Starts int   // roll-out start sequences drawn from the data set
	Seed   int64 // seeds the starts and the roll-out
	// Policy, when set, is a run directory (its final policy.onnx) or an
	// ONNX actor file rolled out in the model instead of the run's own final
	// policy. Two runs' models diagnosed with the same Policy and Seed start
	// from the same data set states and take the same first actions, so
	// their errors compare like for like. The result is then written to
	// DIR/diagnosis-with-NAME.json rather than DIR/diagnosis.json.
	Policy string
}

// DiagnoseOffline loads the finished (or checkpointed) offline run in dir
// and measures its model on opt.Starts roll-out starts. It writes the
// diagnosis as JSON in dir and reads nothing outside dir but opt.Policy.
func DiagnoseOffline(dir string, opt DiagnoseOptions) (*Diagnosis, error) {
	o, err := train.OpenOffline(dir)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	cfg := o.Cfg
	if cfg.Algo == "bc" {
		return nil, fmt.Errorf("experiments: %s is a BC run: it has no model to diagnose", dir)
	}
	if cfg.Env == "" {
		return nil, fmt.Errorf("experiments: %s trained on data without a task: there is no simulator to diagnose its model against", dir)
	}
	if !o.Fitted() {
		return nil, fmt.Errorf("experiments: %s: the model was never fitted", dir)
	}
	policy, name, err := diagPolicy(o, opt.Policy)
	if err != nil {
		return nil, err
	}
	tr, err := o.RolloutActor(context.Background(), policy, opt.Starts, opt.Seed)
	if err != nil {
		return nil, err
	}
	env, err := envs.Make(cfg.Env)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	d := &Diagnosis{Run: dir, Algo: cfg.Algo, Policy: "own", Penalty: cfg.Penalty, Transitions: tr.N}
	out := "diagnosis.json"
	if name != "" {
		d.Policy, out = opt.Policy, "diagnosis-with-"+name+".json"
	}
	od, ad := cfg.ObsDim, cfg.ActDim
	act := make([]float64, ad)
	errs, us := make([]float64, 0, tr.N), make([]float64, 0, tr.N)
	var agree float64
	for i := 0; i < tr.N; i++ {
		obs := tr.Obs[i*od : (i+1)*od]
		if !stats.Finite(obs) || !stats.Finite(tr.NextObs[i*od:(i+1)*od]) {
			continue
		}
		if !env.Restorable(obs, clipMargin) {
			d.SkippedClipped++ // finite, so a velocity at the clip: the true one is unknown
			continue
		}
		if err := env.SetFromObs(obs); err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
		for j := range act {
			act[j] = float64(tr.Act[i*ad+j])
		}
		st, err := env.Step(act)
		if err != nil {
			return nil, err
		}
		var se float64
		for j := 0; j < od; j++ {
			e := float64(tr.NextObs[i*od+j]) - st.Obs[j]
			se += e * e
		}
		e := math.Sqrt(se / float64(od))
		u := float64(tr.Uncertainty[i])
		rewErr := math.Abs(float64(tr.Rew[i]) + cfg.Penalty*u - st.Reward)
		if tr.Done[i] == st.Terminated {
			agree++
		}
		h, k := int(tr.Step[i]), int(tr.Back[i])
		for len(d.PerStep) <= h {
			d.PerStep = append(d.PerStep, DiagStep{H: len(d.PerStep) + 1})
		}
		for len(d.PerK) < k {
			d.PerK = append(d.PerK, DiagK{K: len(d.PerK) + 1})
		}
		d.PerStep[h].add(e, u, rewErr)
		d.PerK[k-1].add(e, u, rewErr)
		if h == 0 && k == 1 {
			d.OneStep.add(e, u, rewErr)
		}
		d.RewErrMean += rewErr
		errs = append(errs, e)
		us = append(us, u)
	}
	n := float64(len(errs))
	if n == 0 {
		return nil, fmt.Errorf("experiments: %s: no finite model transitions", dir)
	}
	for i := range d.PerStep {
		d.PerStep[i].finish()
	}
	for i := range d.PerK {
		d.PerK[i].finish()
	}
	d.OneStep.finish()
	d.RewErrMean /= n
	d.DoneAgree = agree / n
	d.ErrMean, _ = stats.MeanStd(errs)
	d.UMean, _ = stats.MeanStd(us)
	d.Corr = stats.Pearson(us, errs)
	d.RankCorr = stats.Spearman(us, errs)
	idx := make([]int, len(us))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return us[idx[a]] < us[idx[b]] })
	for q := 0; q < 5; q++ {
		lo, hi := q*len(idx)/5, (q+1)*len(idx)/5
		var g DiagGroup
		for _, i := range idx[lo:hi] {
			g.UMean += us[i] / float64(hi-lo)
			g.ErrMean += errs[i] / float64(hi-lo)
		}
		d.ByUQuintile = append(d.ByUQuintile, g)
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, out), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	return d, nil
}

// diagPolicy returns the ONNX actor a diagnosis rolls out: the run's own
// final policy, or the one named by path (a run directory's policy.onnx or
// an .onnx file) with a file-name-safe name for it.
func diagPolicy(o *train.Offline, path string) (policy []byte, name string, err error) {
	if path == "" {
		b, err := o.ActorONNX()
		return b, "", err
	}
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = rundir.Dir(path).Policy()
		name = filepath.Base(filepath.Dir(filepath.Clean(path))) + "-" + filepath.Base(filepath.Clean(path))
	} else {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("experiments: diagnosis policy: %w", err)
	}
	name = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, name)
	return b, name, nil
}

// clipMargin is how close to its task's clip bound an observed velocity
// may come before the diagnosis takes it for clipped.
const clipMargin = 1e-4
