package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// Diagnosis measures how well a run's model and penalty track the true
// dynamics where its policy goes: the policy is rolled out in the model
// from start sequences as in training (an offline run's from its data set,
// an online run's from its real replay buffer), and every model transition
// (s, a, s') is replayed in the real simulator from s (the simulator state
// is rebuilt from the observation: the x position it leaves out does not
// affect these tasks' dynamics), giving the true next state and reward.
// Error is the RMS over dimensions of s'_model - s'_real (the sampled model
// state the agent learns from), and the mean error that of mu - s'_real,
// mu the model's mean next state that s'_model was sampled around (with MC
// dropout, the mean under the transition's masks): the two separate the
// model's means from its variance; U is the run's uncertainty (U^ADM, or the
// ensemble's max-std: MOPO's, MBPO's) before beta (0 for an online run,
// whose roll-outs carry no penalty).
type Diagnosis struct {
	Run         string `json:"run"`
	Algo        string `json:"algo"`
	Policy      string `json:"policy"` // the policy rolled out: "own" or the ONNX file used instead
	Transitions int    `json:"transitions"`
	// SkippedClipped counts transitions left out because their state has a
	// velocity at the observation's clip bound (hopper, walker2d: ±10).
	SkippedClipped int        `json:"skipped_clipped"`
	Penalty        float64    `json:"penalty"`
	Dropout        bool       `json:"dropout"`  // the roll-out drew MC dropout masks (rollout_dropout, unless DiagnoseOptions.NoDropout)
	PerStep        []DiagStep `json:"per_step"` // by roll-out step h = 1..H
	PerK           []DiagK    `json:"per_k"`    // by backtracking length k = 1..m (only 1 for the ensemble)
	// OneStep is the transitions at h = 1 predicted with k = 1: one model
	// step from a real (data set or replay buffer) state, the like-for-like model error of ADM-Roll
	// and the ensemble (at h = 1 ADM-Roll also backtracks into the start's
	// real history, which mixes k-step predictions into PerStep[0]).
	OneStep     DiagStats   `json:"one_step"`
	Corr        float64     `json:"corr_u_error"` // Pearson correlation of U and the error over all transitions
	RankCorr    float64     `json:"rank_corr_u_error"`
	ErrMean     float64     `json:"error_mean"`
	MeanErrMean float64     `json:"mean_error_mean"` // RMS of mu_model - s'_real, averaged
	UMean       float64     `json:"u_mean"`
	RewErrMean  float64     `json:"reward_error_mean"` // |r_model (unpenalised) - r_real|
	DoneAgree   float64     `json:"done_agreement"`    // model and simulator agree on termination
	ByUQuintile []DiagGroup `json:"by_u_quintile"`     // error within each fifth of the transitions sorted by U
	// FromStarts is how the policy fares in the real task from the three
	// kinds of start state (DiagStart); empty when
	// DiagnoseOptions.StartEpisodes is 0, and always for an online run.
	FromStarts []DiagStart `json:"from_starts,omitempty"`
}

// Start-state kinds of DiagStart.From.
const (
	FromReset        = "reset"         // the task's own resets, as in the run's evaluations
	FromEpisodeStart = "episode start" // data set rows that begin an episode
	FromMidEpisode   = "mid-episode"   // data set rows within an episode
)

// DiagStart is how the diagnosed policy fares in the real task from one
// kind of start state: its deterministic action, from the state until
// termination or the task's step limit. A policy that runs on from
// mid-episode states but falls from resets and episode starts has learnt
// where the data set's states are dense, not how to start.
type DiagStart struct {
	From       string  `json:"from"` // FromReset, FromEpisodeStart or FromMidEpisode
	Episodes   int     `json:"episodes"`
	MeanSteps  float64 `json:"mean_steps"`
	MeanReturn float64 `json:"mean_return"`
	AtLimit    float64 `json:"reached_limit"` // share of the episodes that ran to the step limit
	// Rows are the data set rows started from (nil for FromReset), and
	// Seeds the reset seeds (nil otherwise), so that any episode can be
	// replayed.
	Rows  []int   `json:"rows,omitempty"`
	Seeds []int64 `json:"seeds,omitempty"`
}

// DiagStats are the averages over a group of replayed transitions.
type DiagStats struct {
	Transitions int     `json:"transitions"`
	ErrMean     float64 `json:"error_mean"`
	// MeanErrMean is the average RMS over dimensions of the model's mean
	// next state minus the simulator's (ErrMean's, before the sample).
	MeanErrMean float64 `json:"mean_error"`
	UMean       float64 `json:"u_mean"`
	RewErrMean  float64 `json:"reward_error_mean"`
}

// add sums one transition's error, mean error, U and reward error (finish
// averages).
func (s *DiagStats) add(e, me, u, rewErr float64) {
	s.Transitions++
	s.ErrMean += e
	s.MeanErrMean += me
	s.UMean += u
	s.RewErrMean += rewErr
}

// finish turns the sums into means.
func (s *DiagStats) finish() {
	if s.Transitions > 0 {
		c := float64(s.Transitions)
		s.ErrMean, s.MeanErrMean, s.UMean, s.RewErrMean = s.ErrMean/c, s.MeanErrMean/c, s.UMean/c, s.RewErrMean/c
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

// DiagnoseOptions selects what DiagnoseOffline and DiagnoseOnline roll
// out.
type DiagnoseOptions struct {
	Starts int   // roll-out start sequences drawn from the data set (offline) or a real buffer (online)
	Seed   int64 // seeds the starts and the roll-out
	// Policy, when set, is a run directory (its final policy.onnx) or an
	// ONNX actor file rolled out in the model instead of the run's own
	// policy (offline: its final one; online: its actor at the last
	// checkpoint). Two runs' models diagnosed with the same Policy and Seed
	// start from the same states and take the same first actions, so their
	// errors compare like for like. The result is then written to
	// DIR/diagnosis-with-NAME.json rather than DIR/diagnosis.json.
	Policy string
	// StartEpisodes is the number of episodes run from each kind of start
	// state (Diagnosis.FromStarts); 0 leaves the study out. Offline only:
	// an online run has no data set to start from.
	StartEpisodes int
	// NoDropout rolls an ADM run's model out without MC dropout even when
	// its roll-outs use it (rollout_dropout), to tell the error of its
	// means from that of the dropout masks; a no-op for a run without
	// dropout (Diagnosis.Dropout records what was used). The result is
	// written to diagnosis-nodropout.json (diagnosis-with-NAME-nodropout.json).
	NoDropout bool
	// Buffer, when set, is another online run of the same task whose real
	// replay buffer (at its last checkpoint) supplies the starts instead of
	// the diagnosed run's own: two online runs diagnosed with the same
	// Buffer, Policy and Seed start from the same states (the same rows
	// when both draw starts by the same rule). Online only.
	Buffer string
}

// ErrCannotDiagnose marks a DiagnoseOnline error that lies in what it was
// asked to diagnose (no such run, a run without a model, a model never
// fitted, a start buffer of another task, a policy file that cannot be
// read), not in the diagnosis.
var ErrCannotDiagnose = errors.New("cannot diagnose")

// DiagnoseOffline loads the finished (or checkpointed) offline run in dir
// and measures its model on opt.Starts roll-out starts. It writes the
// diagnosis as JSON in dir and reads nothing outside dir but opt.Policy.
func DiagnoseOffline(dir string, opt DiagnoseOptions) (*Diagnosis, error) {
	if opt.Buffer != "" {
		return nil, fmt.Errorf("experiments: %s: an offline run's starts come from its data set (a start buffer is for online runs)", dir)
	}
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
	policy, name, err := diagPolicy(o.ActorONNX, opt.Policy)
	if err != nil {
		return nil, err
	}
	tr, err := o.RolloutActorWith(context.Background(), policy, opt.Starts, opt.Seed,
		train.RolloutOptions{Mean: true, NoDropout: opt.NoDropout})
	if err != nil {
		return nil, err
	}
	task, err := cfg.Task()
	if err != nil {
		return nil, err
	}
	env, err := envs.MakeTask(task)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	d, err := replayModel(env, tr, dir, cfg.Algo, cfg.Penalty)
	if err != nil {
		return nil, err
	}
	d.Dropout = o.RolloutDropout() && !opt.NoDropout
	if opt.StartEpisodes > 0 {
		if d.FromStarts, err = fromStarts(env, cfg.Dataset, policy, opt.StartEpisodes, opt.Seed); err != nil {
			return nil, fmt.Errorf("experiments: %s: %w", dir, err)
		}
	}
	return d, writeDiagnosis(d, dir, opt.Policy, name, opt.NoDropout)
}

// DiagnoseOnline loads the online run (admpo or mbpo) in dir at its last
// checkpoint, finished or not, and measures its model (the ADM or the
// ensemble) as DiagnoseOffline does: opt.Starts start sequences drawn from
// its real replay buffer (or opt.Buffer's run's), rolled out for the run's
// current roll-out length with its actor at the checkpoint (or
// opt.Policy), every transition replayed in the simulator. Online roll-outs
// have no penalty: Penalty is 0 and U is reported as computed (U^ADM, or
// the ensemble's max-std). It writes the diagnosis as JSON in dir and
// reads nothing outside dir but opt.Policy and opt.Buffer. Errors in what
// it is asked to diagnose wrap ErrCannotDiagnose.
func DiagnoseOnline(dir string, opt DiagnoseOptions) (*Diagnosis, error) {
	if opt.StartEpisodes > 0 {
		return nil, fmt.Errorf("experiments: %w %s: the start-state study plays the policy from a data set's states; an online run has none",
			ErrCannotDiagnose, dir)
	}
	cfg, err := onlineRunConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w %s: %v", ErrCannotDiagnose, dir, err)
	}
	switch {
	case cfg.Algo == "sac":
		return nil, fmt.Errorf("experiments: %w %s: a sac run has no model to diagnose", ErrCannotDiagnose, dir)
	case cfg.IsRemote():
		return nil, fmt.Errorf("experiments: %w %s: it played the remote environment %s: there is no simulator here to replay its model in",
			ErrCannotDiagnose, dir, cfg.Env)
	}
	if opt.Buffer != "" {
		other, err := onlineRunConfig(opt.Buffer)
		if err != nil {
			return nil, fmt.Errorf("experiments: %w %s with the starts of %s: %v", ErrCannotDiagnose, dir, opt.Buffer, err)
		}
		if other.Env != cfg.Env || other.EnvDigest != cfg.EnvDigest {
			return nil, fmt.Errorf("experiments: %w %s with the starts of %s: that run played %s, this one %s",
				ErrCannotDiagnose, dir, opt.Buffer, other.Env, cfg.Env)
		}
	}
	o, err := train.OpenOnline(dir)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	if !o.Fitted() {
		return nil, fmt.Errorf("experiments: %w %s: its model was never fitted (the checkpoint is at env step %d)", ErrCannotDiagnose, dir, o.Step())
	}
	if opt.Buffer != "" {
		if err := o.DrawStartsFrom(opt.Buffer); err != nil {
			return nil, err
		}
	}
	policy, name, err := diagPolicy(o.ActorONNX, opt.Policy)
	if err != nil && opt.Policy != "" {
		return nil, fmt.Errorf("experiments: %w %s with the policy %s: %v", ErrCannotDiagnose, dir, opt.Policy, err)
	}
	if err != nil {
		return nil, err
	}
	tr, err := o.RolloutActorWith(context.Background(), policy, opt.Starts, opt.Seed,
		train.RolloutOptions{Mean: true, NoDropout: opt.NoDropout})
	if err != nil {
		return nil, err
	}
	task, err := o.Cfg.Task()
	if err != nil {
		return nil, err
	}
	env, err := envs.MakeTask(task)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	d, err := replayModel(env, tr, dir, o.Cfg.Algo, 0)
	if err != nil {
		return nil, err
	}
	d.Dropout = o.RolloutDropout() && !opt.NoDropout
	return d, writeDiagnosis(d, dir, opt.Policy, name, opt.NoDropout)
}

// onlineRunConfig reads the config.json of the online run in dir.
func onlineRunConfig(dir string) (train.OnlineConfig, error) {
	var c train.OnlineConfig
	b, err := os.ReadFile(rundir.Dir(dir).Config())
	if err != nil {
		return c, fmt.Errorf("%s is not a run directory (%w)", dir, err)
	}
	if k, err := rundir.KindOf(b); err == nil && k != rundir.Online {
		return c, fmt.Errorf("%s holds an %s run, not an online one", dir, k)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", rundir.Dir(dir).Config(), err)
	}
	return c, nil
}

// replayModel replays every model transition of tr in env from its state
// and gathers the errors (of the sampled next state and of the mean one:
// tr must hold MeanNextObs), U and reward errors of the run in dir (algo;
// penalty is the beta its roll-outs' rewards carry, 0 for none) into a
// Diagnosis of its own policy (writeDiagnosis names another).
func replayModel(env *envs.Env, tr *infer.Transitions, dir, algo string, penalty float64) (*Diagnosis, error) {
	d := &Diagnosis{Run: dir, Algo: algo, Policy: "own", Penalty: penalty, Transitions: tr.N}
	od, ad := env.Task.ObsDim, env.Task.ActDim
	if len(tr.MeanNextObs) != tr.N*od {
		return nil, fmt.Errorf("experiments: %s: the roll-out holds %d mean next-state values for %d transitions of %d", dir, len(tr.MeanNextObs), tr.N, od)
	}
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
		me := rmsDiff(tr.MeanNextObs[i*od:(i+1)*od], st.Obs)
		u := float64(tr.Uncertainty[i])
		rewErr := math.Abs(float64(tr.Rew[i]) + penalty*u - st.Reward)
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
		d.PerStep[h].add(e, me, u, rewErr)
		d.PerK[k-1].add(e, me, u, rewErr)
		if h == 0 && k == 1 {
			d.OneStep.add(e, me, u, rewErr)
		}
		d.RewErrMean += rewErr
		d.MeanErrMean += me
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
	d.MeanErrMean /= n
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
	return d, nil
}

// rmsDiff is the RMS over dimensions of model - real.
func rmsDiff(model []float32, real []float64) float64 {
	var se float64
	for j, v := range real {
		e := float64(model[j]) - v
		se += e * e
	}
	return math.Sqrt(se / float64(len(real)))
}

// writeDiagnosis writes d to dir/diagnosis.json, or, for a policy other
// than the run's own (policy, named name by diagPolicy), to
// dir/diagnosis-with-NAME.json, and records that policy in d; noDropout
// (DiagnoseOptions.NoDropout) adds -nodropout before .json.
func writeDiagnosis(d *Diagnosis, dir, policy, name string, noDropout bool) error {
	out := "diagnosis"
	if name != "" {
		d.Policy, out = policy, "diagnosis-with-"+name
	}
	if noDropout {
		out += "-nodropout"
	}
	out += ".json"
	b, _ := json.MarshalIndent(d, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, out), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return nil
}

// fromStarts runs the deterministic policy for n episodes from each kind of
// start state: resets with seeds seed, seed+1, ...; and data set rows drawn
// without replacement (rows whose velocities are clipped are left out).
func fromStarts(env *envs.Env, dataset string, policy []byte, n int, seed int64) ([]DiagStart, error) {
	d, err := datasets.Read(dataset)
	if err != nil {
		return nil, err
	}
	actor, err := collect.OpenONNXPolicy(policy, infer.Options{}, true)
	if err != nil {
		return nil, err
	}
	defer actor.Close()
	var starts, mids []int
	first := true
	for i := 0; i < d.N; i++ {
		if env.Restorable(d.Obs[i*d.ObsDim:(i+1)*d.ObsDim], clipMargin) {
			if first {
				starts = append(starts, i)
			} else {
				mids = append(mids, i)
			}
		}
		first = d.Terminal[i] || d.Timeout[i]
	}
	rng := rand.New(rand.NewSource(seed))
	limit := envs.MaxEpisodeSteps
	reset := DiagStart{From: FromReset}
	for ep := 0; ep < n; ep++ {
		reset.Seeds = append(reset.Seeds, seed+int64(ep))
	}
	r, err := envs.Evaluate(env, actor, envs.EvalConfig{Episodes: n, Seed: func(ep int) int64 { return reset.Seeds[ep] }})
	if err != nil {
		return nil, err
	}
	for i, ret := range r.Returns {
		reset.add(ret, r.Lengths[i], limit)
	}
	out := []DiagStart{reset.finish()}
	for _, g := range []struct {
		from string
		rows []int
	}{{FromEpisodeStart, starts}, {FromMidEpisode, mids}} {
		s := DiagStart{From: g.from}
		for _, j := range rng.Perm(len(g.rows))[:min(n, len(g.rows))] {
			row := g.rows[j]
			if err := env.SetFromObs(d.Obs[row*d.ObsDim : (row+1)*d.ObsDim]); err != nil {
				return nil, err
			}
			ret, steps, err := envs.Play(env, actor, env.Observation(), nil, envs.Hooks{})
			if err != nil {
				return nil, fmt.Errorf("from data set row %d: %w", row, err)
			}
			s.Rows = append(s.Rows, row)
			s.add(ret, steps, limit)
		}
		out = append(out, s.finish())
	}
	return out, nil
}

// add counts one episode.
func (s *DiagStart) add(ret float64, steps, limit int) {
	s.Episodes++
	s.MeanReturn += ret
	s.MeanSteps += float64(steps)
	if steps >= limit {
		s.AtLimit++
	}
}

// finish turns the sums into means.
func (s DiagStart) finish() DiagStart {
	if s.Episodes > 0 {
		c := float64(s.Episodes)
		s.MeanReturn, s.MeanSteps, s.AtLimit = s.MeanReturn/c, s.MeanSteps/c, s.AtLimit/c
	}
	return s
}

// diagPolicy returns the ONNX actor a diagnosis rolls out: the run's own
// (own exports it), or the one named by path (a run directory's policy.onnx
// or an .onnx file) with a file-name-safe name for it. A run directory
// without a final policy (a run still training) gives its actor at its last
// checkpoint, named NAME-checkpoint.
func diagPolicy(own func() ([]byte, error), path string) (policy []byte, name string, err error) {
	if path == "" {
		b, err := own()
		return b, "", err
	}
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = rundir.Dir(path).Policy()
		name = filepath.Base(filepath.Dir(filepath.Clean(path))) + "-" + filepath.Base(filepath.Clean(path))
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			b, err := checkpointActor(path)
			if err != nil {
				return nil, "", fmt.Errorf("experiments: diagnosis policy: %s has no final policy and %w", path, err)
			}
			return b, safeName(name + "-checkpoint"), nil
		}
	} else {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("experiments: diagnosis policy: %w", err)
	}
	return b, safeName(name), nil
}

// checkpointActor exports the actor of the online or offline run in dir as
// its last checkpoint left it.
func checkpointActor(dir string) ([]byte, error) {
	b, err := os.ReadFile(rundir.Dir(dir).Config())
	if err != nil {
		return nil, fmt.Errorf("is not a run directory (%w)", err)
	}
	kind, err := rundir.KindOf(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rundir.Dir(dir).Config(), err)
	}
	if kind == rundir.Online {
		o, err := train.OpenOnline(dir)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		return o.ActorONNX()
	}
	o, err := train.OpenOffline(dir)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return o.ActorONNX()
}

// safeName maps name to a file-name-safe one.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, name)
}

// clipMargin is how close to its task's clip bound an observed velocity
// may come before the diagnosis takes it for clipped.
const clipMargin = 1e-4
