package dynamics

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// ADMFitConfig configures FitADM. DefaultADMFitConfig holds the paper's
// values.
type ADMFitConfig struct {
	LR          float32 // Adam learning rate (3e-4)
	Batch       int     // start states per train step (256)
	HoldoutFrac float64 // holdout share of the buffer's tail (0.2) ...
	MaxHoldout  int     // ... capped at this many start states (1000; 500 online)
	Patience    int     // stop after this many epochs without holdout improvement (25)
	MinRelGain  float64 // an improvement must beat the best by this fraction (0)
	MaxEpochs   int     // cap on epochs (0: none)
	MaxSteps    int     // cap on train steps per epoch (0: EpochPasses full passes over the train starts)
	// MaxTotalSteps caps the Adam steps of the whole fit (0: none); the
	// epoch it runs out in ends there and is evaluated as usual.
	MaxTotalSteps int
	// EpochPasses is how many passes over the train starts (each in a fresh
	// order) make one epoch (0 or 1: one). The authors' epoch is
	// train/Batch·m Adam steps of one k each; EpochPasses = m gives as many
	// steps, each unrolling all k, so Patience means as much training.
	EpochPasses int
	// AuthorsImprove keeps a model by the authors' rule (some k's holdout
	// MSE improved and the mean over k improved, each against the kept
	// model's) instead of the variance-scaled holdout MSE.
	AuthorsImprove bool
	Dropout        float64 // ResBlock dropout (0.1)
	// HoldoutDropout validates with dropout Dropout on, as the authors' model
	// never put in eval mode: every holdout (start, k) pair gets its own
	// masks (infer.DropoutKeep keyed by a seed drawn from the fit's rng per
	// epoch, the start index and k).
	HoldoutDropout bool
	// WarmStart continues from m's current weights instead of drawing new
	// ones (the reference implementation re-initialises at every fit; MBPO's
	// ensemble keeps training).
	WarmStart bool
	EvalRows  int // holdout rows per plain-Go forward chunk (1024)
	TrainEval int // train starts sampled for the final per-k train losses (2000)
	// Bootstrap trains the bootstrapping RNN baseline on the same network
	// instead of the ADM: step k reads the real state s_{t+k-1} (not the
	// repeated start state) with a_{t+k-1} and predicts the one-step
	// [s_{t+k} - s_{t+k-1}, r_{t+k}]; roll-outs then feed back its own
	// predicted states.
	Bootstrap bool
	// OneK trains as the authors' loop does: every Adam step draws one k
	// in 1..m uniformly (from the fit's rng, at the start of its epoch)
	// and trains the one-k graph of k (models.NewADMTrainGraphK: the GRU
	// unrolled k steps, the head at step k only) on the k-step targets of
	// its batch of starts; a start whose sequence ends before k steps
	// weighs 0. The default (false) trains every k of every start at once.
	// The device trainer runs the all-k step only: OneK with Device is an
	// error.
	OneK bool
	// OnEpoch, when set, is called after every epoch with its point of
	// FitReport.Curve.
	OnEpoch func(FitEpoch)
	// Resume, when set, snapshots the fit and continues it from
	// Resume.From (see FitResume).
	Resume *FitResume
	// Device, when set, runs the train steps there (package admdev: the
	// same step as the CPU graph's, dropout masks included); the weights
	// come back to the host for every holdout evaluation and snapshot.
	// The caller keeps it open and does not use it concurrently.
	Device device.Device
	// DeviceGraph records the device's train step once as a device graph
	// and replays it (admdev.Config.Graph; Device must be a
	// device.Capturer).
	DeviceGraph bool
}

// DefaultADMFitConfig returns the reference implementation's fit settings.
func DefaultADMFitConfig() ADMFitConfig {
	return ADMFitConfig{LR: 3e-4, Batch: 256, HoldoutFrac: 0.2, MaxHoldout: 1000, Patience: 25,
		Dropout: models.ADMDropout, EvalRows: 1024, TrainEval: 2000}
}

// ADMEpoch records one epoch of an ADM fit.
type ADMEpoch struct {
	Epoch          int
	TrainNLL       float64   // mean train-batch NLL over the epoch
	Steps          int       // Adam steps in the epoch
	Seconds        float64   // wall time since the fit started, after the epoch's holdout check
	HoldoutMSE     float64   // mean squared error of the mean over valid (start, k) pairs and dims
	HoldoutNLL     float64   // Gaussian NLL (without constants) over the same pairs
	HoldoutMSEPerK []float64 // k = 1..m
	HoldoutNLLPerK []float64
	// HoldoutScaledMSE is the early-stopping metric: the holdout squared
	// error with every target dimension divided by its variance.
	HoldoutScaledMSE float64
}

// ADMFitReport is a FitReport with the ADM's per-k losses and history.
// FitReport.HoldoutLoss is the best holdout MSE (the early-stopping metric);
// HoldoutPerK its per-k values.
type ADMFitReport struct {
	FitReport
	Best           ADMEpoch   // the epoch whose weights were kept
	TrainMSEPerK   []float64  // kept weights, on up to TrainEval train starts
	TrainNLLPerK   []float64  //
	HoldoutNLLPerK []float64  // kept weights
	History        []ADMEpoch // every epoch
	TrainStarts    int
}

// admSplit is a buffer split into train and holdout start indices.
type admSplit struct {
	data          *buffer.Replay
	m             int
	nTrain, nHold int
}

// newADMSplit puts the last min(frac·n, maxHold) transitions in the holdout.
func newADMSplit(data *buffer.Replay, m int, frac float64, maxHold int) (admSplit, error) {
	n := data.Len()
	hold := min(int(frac*float64(n)), maxHold)
	if frac > 0 && hold < 1 {
		hold = 1
	}
	if n-hold < 1 || hold < 1 {
		return admSplit{}, fmt.Errorf("dynamics: ADM fit needs train and holdout data, have %d transitions (holdout %d)", n, hold)
	}
	return admSplit{data: data, m: m, nTrain: n - hold, nHold: hold}, nil
}

// fill loads the sequences starting at the given indices into rows of sb;
// train sequences stop where the holdout begins.
func (s admSplit) fill(sb *buffer.SeqBatch, starts []int, train bool) error {
	for row, k := range starts {
		if err := s.data.SequenceAt(k, sb, row); err != nil {
			return err
		}
		if train {
			for j := 0; j < s.m; j++ {
				if k+j >= s.nTrain && sb.Mask[row*s.m+j] != 0 {
					sb.Mask[row*s.m+j] = 0
					clear(sb.NextObs[(row*s.m+j)*sb.ObsDim : (row*s.m+j+1)*sb.ObsDim])
					sb.Rew[row*s.m+j] = 0
				}
			}
		}
	}
	for row := len(starts); row < sb.N; row++ { // padding rows
		clear(sb.Mask[row*s.m : (row+1)*s.m])
		clear(sb.Obs0[row*sb.ObsDim : (row+1)*sb.ObsDim])
		clear(sb.Act[row*s.m*sb.ActDim : (row+1)*s.m*sb.ActDim])
		clear(sb.NextObs[row*s.m*sb.ObsDim : (row+1)*s.m*sb.ObsDim])
	}
	return nil
}

// fitNormalizer z-scores [obs, act] over every stored transition (float64
// sums; a std below 1e-12 becomes 1).
func fitNormalizer(data *buffer.Replay, n *models.Normalizer) error {
	od, ad := data.ObsDim, data.ActDim
	in := od + ad
	sum := make([]float64, in)
	sq := make([]float64, in)
	sb := buffer.NewSeqBatch(1, 1, od, ad)
	cnt := data.Len()
	if cnt == 0 || len(n.Mean) != in || len(n.Std) != in {
		return fmt.Errorf("dynamics: normaliser of dim %d over %d transitions of dim %d", len(n.Mean), cnt, in)
	}
	row := make([]float64, in)
	for k := 0; k < cnt; k++ {
		if err := data.SequenceAt(k, sb, 0); err != nil {
			return err
		}
		for j := 0; j < od; j++ {
			row[j] = float64(sb.Obs0[j])
		}
		for j := 0; j < ad; j++ {
			row[od+j] = float64(sb.Act[j])
		}
		for j, v := range row {
			sum[j] += v
			sq[j] += v * v
		}
	}
	for j := range sum {
		mean := sum[j] / float64(cnt)
		v := math.Max(sq[j]/float64(cnt)-mean*mean, 0)
		std := math.Sqrt(v)
		if std < 1e-12 {
			std = 1
		}
		n.Mean[j], n.Std[j] = float32(mean), float32(std)
	}
	return nil
}

// stepObs returns the state read at step k (0-based) of row r: the start
// state for the ADM, the state reached after k steps for the bootstrapping
// RNN.
func stepObs(sb *buffer.SeqBatch, r, k int, bootstrap bool) []float32 {
	od, m := sb.ObsDim, sb.M
	if !bootstrap || k == 0 {
		return sb.Obs0[r*od : (r+1)*od]
	}
	return sb.NextObs[(r*m+k-1)*od : (r*m+k)*od]
}

// fillADMGraph writes a sequence batch into the graph's time-major inputs:
// X = norm([state read at step k, a]), Target = [s_{t+k+1} - that state,
// r], Weight = the step's mask. A one-k graph (a.K > 0) gets the first K
// steps' inputs and step K's targets and weights only.
func fillADMGraph(a *models.ADMGraph, sb *buffer.SeqBatch, bootstrap bool) {
	c := a.Model.Cfg
	od, ad, m, b := c.ObsDim, c.ActDim, c.M, a.Batch
	in, d := od+ad, od+1
	norm := &a.Model.Norm
	steps := m
	if a.K > 0 {
		steps = a.K
	}
	for k := 0; k < steps; k++ {
		for r := 0; r < b; r++ {
			row := k*b + r
			x := a.X[row*in : (row+1)*in]
			s0 := stepObs(sb, r, k, bootstrap)
			copy(x[:od], s0)
			copy(x[od:], sb.Act[(r*m+k)*ad:(r*m+k+1)*ad])
			for j := range x {
				x[j] = (x[j] - norm.Mean[j]) / norm.Std[j]
			}
			if a.K > 0 {
				if k != a.K-1 {
					continue // the one-k graph has no head before step K
				}
				row = r
			}
			tg := a.Target[row*d : (row+1)*d]
			next := sb.NextObs[(r*m+k)*od : (r*m+k+1)*od]
			w := sb.Mask[r*m+k]
			a.Weight[row] = w
			if w == 0 {
				clear(tg)
				continue
			}
			for j := 0; j < od; j++ {
				tg[j] = next[j] - s0[j]
			}
			tg[od] = sb.Rew[r*m+k]
		}
	}
}

// drawKs draws the k (1..m, uniform) of each of an epoch's n Adam steps
// from rng; drawn at the epoch's start, they are redrawn alike when a fit
// resumes mid-epoch from the epoch's rng state.
func drawKs(rng *rand.Rand, n, m int) []int {
	ks := make([]int, n)
	for i := range ks {
		ks[i] = 1 + rng.Intn(m)
	}
	return ks
}

// newOneKGraphs builds the one-k training graphs of k = 1..M (index k) of
// g's model, drawing their dropout masks from g's stream.
func newOneKGraphs(g *models.ADMGraph, fc ADMFitConfig) ([]*models.ADMGraph, error) {
	gs := make([]*models.ADMGraph, g.Model.Cfg.M+1)
	for k := 1; k < len(gs); k++ {
		gk, err := models.NewADMTrainGraphK(g.Model, k, fc.Batch, fc.Dropout, 0)
		if err != nil {
			closeGraphs(gs)
			return nil, fmt.Errorf("dynamics: one-k ADM fit: %w", err)
		}
		gk.ShareDropout(g)
		gs[k] = gk
	}
	return gs, nil
}

// closeGraphs closes the non-nil graphs of gs.
func closeGraphs(gs []*models.ADMGraph) {
	for _, g := range gs {
		if g != nil {
			_ = g.Close()
		}
	}
}

// admEval holds the per-k error sums of a plain-Go evaluation.
type admEval struct {
	mse, nll []float64
	smse     []float64 // squared errors scaled per dimension (see targetScale)
	count    []float64 // valid (start, k) pairs
}

// targetScale returns 1/variance of every one-step target dimension (the
// change of each observation value, and the reward) over the buffer. The
// early-stopping metric weighs squared errors by it, so that small-valued
// dimensions (positions, angles) count as much as large ones (velocities):
// with the raw pooled MSE, the velocity errors decide when to stop and the
// kept model can be no better than "no change" on the positions.
func targetScale(data *buffer.Replay) []float64 {
	od := data.ObsDim
	d := od + 1
	sum, sq := make([]float64, d), make([]float64, d)
	n := float64(data.Len())
	for k := 0; k < data.Len(); k++ {
		t := data.At(k)
		for j := 0; j < d; j++ {
			v := float64(t.Rew)
			if j < od {
				v = float64(t.NextObs[j] - t.Obs[j])
			}
			sum[j] += v
			sq[j] += v * v
		}
	}
	v := make([]float64, d)
	top := 0.0
	for j := range v {
		mean := sum[j] / n
		v[j] = math.Max(sq[j]/n-mean*mean, 0)
		top = math.Max(top, v[j])
	}
	// A (near) constant target, such as inverted-pendulum's reward of 1,
	// must not get an enormous weight: floor the variances at 1e-3 of the
	// largest.
	s := make([]float64, d)
	for j := range s {
		s[j] = 1 / math.Max(v[j], math.Max(1e-3*top, 1e-12))
	}
	return s
}

// evalDropout is MC dropout in evaluateADM: probability p, masks keyed by
// seed, the start index and k.
type evalDropout struct {
	p    float64
	seed int64
}

// mult writes the multipliers (keep flag / (1-p)) of start's k-step
// prediction into row r of a [blocks, n, hidden] slice; keep is scratch of
// blocks·hidden values.
func (d *evalDropout) mult(dst, keep []float32, blocks, hidden, n, r, start, k int) {
	infer.DropoutKeep(d.seed, 0, start, k, d.p, keep)
	scale := float32(1 / (1 - d.p))
	for b := 0; b < blocks; b++ {
		row := dst[(b*n+r)*hidden : (b*n+r+1)*hidden]
		for u, v := range keep[b*hidden : (b+1)*hidden] {
			row[u] = v * scale
		}
	}
}

// evaluateADM runs the plain-Go forward on the given starts (in chunks of
// rows) and accumulates per-k MSE and NLL over valid steps; with drop
// (not nil) the head runs with MC dropout.
func evaluateADM(m *models.ADM, s admSplit, starts []int, rows int, train, bootstrap bool, scale []float64, drop *evalDropout) (admEval, error) {
	c := m.Cfg
	od, ad, M := c.ObsDim, c.ActDim, c.M
	d := od + 1
	ev := admEval{mse: make([]float64, M), nll: make([]float64, M), smse: make([]float64, M), count: make([]float64, M)}
	sb := buffer.NewSeqBatch(rows, M, od, ad)
	obs := make([]float32, rows*od)
	act := make([]float32, rows*ad)
	mean := make([]float32, rows*d)
	lv := make([]float32, rows*d)
	var mult, keep []float32
	if drop != nil {
		mult = make([]float32, c.ResBlocks*rows*c.Hidden)
		keep = make([]float32, c.ResBlocks*c.Hidden)
	}
	st := m.NewState(rows)
	for lo := 0; lo < len(starts); lo += rows {
		chunk := starts[lo:min(lo+rows, len(starts))]
		if err := s.fill(sb, chunk, train); err != nil {
			return ev, err
		}
		n := len(chunk)
		if st.Batch != n {
			st = m.NewState(n)
		}
		st.Reset()
		for k := 0; k < M; k++ {
			for r := 0; r < n; r++ {
				copy(obs[r*od:(r+1)*od], stepObs(sb, r, k, bootstrap))
				copy(act[r*ad:(r+1)*ad], sb.Act[(r*M+k)*ad:(r*M+k+1)*ad])
			}
			if err := m.GRUStep(st, obs[:n*od], act[:n*ad]); err != nil {
				return ev, err
			}
			var mk []float32
			if drop != nil {
				mk = mult[:c.ResBlocks*n*c.Hidden]
				for r := 0; r < n; r++ {
					drop.mult(mk, keep, c.ResBlocks, c.Hidden, n, r, chunk[r], k+1)
				}
			}
			if err := m.HeadDropout(st, mk, mean[:n*d], lv[:n*d]); err != nil {
				return ev, err
			}
			for r := 0; r < n; r++ {
				if sb.Mask[r*M+k] == 0 {
					continue
				}
				s0 := obs[r*od : (r+1)*od]
				next := sb.NextObs[(r*M+k)*od : (r*M+k+1)*od]
				var se, sse, nl float64
				for j := 0; j < d; j++ {
					var tg float64
					if j < od {
						tg = float64(next[j]) - float64(s0[j])
					} else {
						tg = float64(sb.Rew[r*M+k])
					}
					e := float64(mean[r*d+j]) - tg
					l := float64(lv[r*d+j])
					se += e * e
					if scale != nil {
						sse += e * e * scale[j]
					}
					nl += e*e*math.Exp(-l) + l
				}
				ev.mse[k] += se / float64(d)
				ev.smse[k] += sse / float64(d)
				ev.nll[k] += nl / float64(d)
				ev.count[k]++
			}
		}
	}
	return ev, nil
}

// scaledMSE is the pooled dimension-scaled MSE.
func (ev admEval) scaledMSE() float64 {
	var s, c float64
	for k := range ev.smse {
		s += ev.smse[k]
		c += ev.count[k]
	}
	if c == 0 {
		return math.NaN()
	}
	return s / c
}

// summary returns the pooled MSE and NLL and the per-k means.
func (ev admEval) summary() (mse, nll float64, msePerK, nllPerK []float64) {
	var tm, tn, tc float64
	for k := range ev.mse {
		tm += ev.mse[k]
		tn += ev.nll[k]
		tc += ev.count[k]
		mk, nk := math.NaN(), math.NaN()
		if ev.count[k] > 0 {
			mk, nk = ev.mse[k]/ev.count[k], ev.nll[k]/ev.count[k]
		}
		msePerK = append(msePerK, mk)
		nllPerK = append(nllPerK, nk)
	}
	if tc == 0 {
		return math.NaN(), math.NaN(), msePerK, nllPerK
	}
	return tm / tc, tn / tc, msePerK, nllPerK
}

// authorsImproved is the authors' test for keeping a new model: some k's
// holdout MSE is below the kept model's and the mean over k is below the
// kept model's mean (k with no holdout pairs, NaN, are left out).
func authorsImproved(kept, now []float64) bool {
	someK := false
	var sk, sn float64
	n := 0
	for k := range now {
		if math.IsNaN(kept[k]) || math.IsNaN(now[k]) {
			continue
		}
		someK = someK || now[k] < kept[k]
		sk += kept[k]
		sn += now[k]
		n++
	}
	return someK && n > 0 && sn/float64(n) < sk/float64(n)
}

func seqRange(lo, hi int) []int {
	s := make([]int, hi-lo)
	for i := range s {
		s[i] = lo + i
	}
	return s
}

// FitADM fits m to the buffer's sequences as the reference implementation
// does: m is re-initialised (weights drawn from rng, in place, so graphs and
// exporters holding its slices see the result), its normaliser is set from
// the buffer, the last min(HoldoutFrac·n, MaxHoldout) start states are held
// out, and Adam trains one m-step unroll per start state with the head on
// every k (Gaussian NLL over valid (start, k) pairs plus the bound terms),
// or with fc.OneK the authors' step: one drawn k per Adam step, a k-step
// unroll with the head at step k. After every epoch the holdout MSE is measured, each target dimension
// scaled by its variance (targetScale); training stops after Patience
// epochs without improvement of it (or MaxEpochs) and the best weights are
// kept. A cancelled ctx stops the fit within one Adam step and returns
// ctx's error; m is then left part-trained. With fc.Resume the fit hands out
// snapshots and continues from one (FitResume).
func FitADM(ctx context.Context, m *models.ADM, data *buffer.Replay, fc ADMFitConfig, rng *rand.Rand) (ADMFitReport, error) {
	var rep ADMFitReport
	c := m.Cfg
	if data.ObsDim != c.ObsDim || data.ActDim != c.ActDim {
		return rep, fmt.Errorf("dynamics: ADM dims %d/%d, buffer %d/%d", c.ObsDim, c.ActDim, data.ObsDim, data.ActDim)
	}
	if fc.Batch <= 0 || fc.LR <= 0 || fc.Patience <= 0 || fc.EvalRows <= 0 {
		return rep, fmt.Errorf("dynamics: invalid ADM fit config %+v", fc)
	}
	if fc.OneK && fc.Device != nil {
		return rep, fmt.Errorf("dynamics: the one-k ADM fit runs on the CPU only; the %s device trains every k at once (fit all k, or leave the device out)", fc.Device.Name())
	}
	split, err := newADMSplit(data, c.M, fc.HoldoutFrac, fc.MaxHoldout)
	if err != nil {
		return rep, err
	}
	rs := fc.Resume
	if err := rs.check(); err != nil {
		return rep, err
	}
	var from *ckpt.File
	var pr *fitProgress
	if rs != nil && rs.From != nil {
		if from, pr, err = decodeSnapshot(rs.From, "adm", data.Len()); err != nil {
			return rep, err
		}
		if err := models.GetADMInto(from, "model", m); err != nil {
			return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
	} else {
		if !fc.WarmStart {
			fresh, err := models.NewADM(c, rng)
			if err != nil {
				return rep, err
			}
			if err := m.CopyFrom(fresh); err != nil {
				return rep, err
			}
		}
		if err := fitNormalizer(data, &m.Norm); err != nil {
			return rep, err
		}
	}
	var seed int64
	if pr == nil {
		seed = rng.Int63()
	}
	g, err := models.NewADMTrainGraph(m, fc.Batch, fc.Dropout, seed)
	if err != nil {
		return rep, err
	}
	defer g.Close()
	var oneK []*models.ADMGraph // index k: the one-k graph of k
	if fc.OneK {
		if oneK, err = newOneKGraphs(g, fc); err != nil {
			return rep, err
		}
		defer closeGraphs(oneK)
	}
	opt := models.NewAdam(g.Params, fc.LR)
	var tr *admdev.Trainer
	if fc.Device != nil {
		if tr, err = newADMTrainer(fc.Device, m, fc, seed); err != nil {
			return rep, err
		}
		defer tr.Close()
	}
	sb := buffer.NewSeqBatch(fc.Batch, c.M, c.ObsDim, c.ActDim)
	holdStarts := seqRange(split.nTrain, split.nTrain+split.nHold)
	rep.HoldoutCount, rep.TrainStarts = split.nHold, split.nTrain
	scale := targetScale(data)

	best := m.Clone()
	bestMSE := math.Inf(1)
	since, total := 0, 0
	start := time.Now()
	first := 1
	if pr != nil {
		if err := models.GetADMInto(from, "best", best); err != nil {
			return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
		if err := restoreAdam(from, pr, opt); err != nil {
			return rep, err
		}
		if err := rs.Source.UnmarshalBinary(pr.RNG); err != nil {
			return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
		g.SetDropoutState(pr.Dropout)
		if tr != nil {
			tr.SetDropoutState(pr.Dropout)
			if err := tr.SetOptim(device.AdamState{M: opt.M, V: opt.V, T: opt.T}); err != nil {
				return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
			}
		}
		bestMSE, rep.Best, since, total = pr.BestMSE, pr.Best, pr.Since, pr.TotalStart
		rep.History, rep.Curve = pr.ADMHistory, pr.Curve
		start = start.Add(-time.Duration(pr.Seconds * float64(time.Second)))
		first = pr.Epoch
	}
	// snapshot encodes the fit's state in epoch before the batch at pos.
	var nllSum, wSum float64
	steps, totalStart := 0, 0
	snapshot := func(epoch, pos int, rngState []byte) ([]byte, error) {
		if err := pullADM(tr, m, opt, g, &nllSum); err != nil {
			return nil, err
		}
		p := &fitProgress{Kind: "adm", DataN: data.Len(), Epoch: epoch, Pos: pos, Steps: steps, TotalStart: totalStart,
			Total: total, Since: since, Seconds: time.Since(start).Seconds(), RNG: rngState, Dropout: g.DropoutState(),
			NLLSum: nllSum, WSum: wSum, BestMSE: bestMSE, Best: rep.Best, ADMHistory: rep.History, Curve: rep.Curve}
		return encodeSnapshot(p, opt, func(f *ckpt.File) error {
			if err := models.PutADM(f, "model", m); err != nil {
				return err
			}
			return models.PutADM(f, "best", best)
		})
	}
	for epoch := first; (fc.MaxEpochs <= 0 || epoch <= fc.MaxEpochs) && (fc.MaxTotalSteps <= 0 || total < fc.MaxTotalSteps); epoch++ {
		nllSum, wSum, steps, totalStart = 0, 0, 0, total
		if err := pushNLLSum(tr, nllSum); err != nil {
			return rep, err
		}
		rngState, err := rs.epochStart(epoch, first, func(st []byte) ([]byte, error) { return snapshot(epoch, 0, st) })
		if err != nil {
			return rep, err
		}
		perm := rng.Perm(split.nTrain)
		for p := 1; p < fc.EpochPasses; p++ {
			perm = append(perm, rng.Perm(split.nTrain)...)
		}
		if fc.MaxSteps > 0 && len(perm) > fc.MaxSteps*fc.Batch {
			perm = perm[:fc.MaxSteps*fc.Batch]
		}
		if left := fc.MaxTotalSteps - total; fc.MaxTotalSteps > 0 && len(perm) > left*fc.Batch {
			perm = perm[:left*fc.Batch]
		}
		var ks []int
		if fc.OneK {
			ks = drawKs(rng, (len(perm)+fc.Batch-1)/fc.Batch, c.M)
		}
		lo0 := 0
		if pr != nil && epoch == first { // continue the snapshot's epoch
			lo0, steps, total, nllSum, wSum = pr.Pos, pr.Steps, pr.Total, pr.NLLSum, pr.WSum
			if err := pushNLLSum(tr, nllSum); err != nil {
				return rep, err
			}
		}
		for lo := lo0; lo < len(perm); lo += fc.Batch {
			if err := ctx.Err(); err != nil {
				return rep, rs.interrupted("ADM", epoch, err, func() ([]byte, error) { return snapshot(epoch, lo, rngState) })
			}
			chunk := perm[lo:min(lo+fc.Batch, len(perm))]
			if err := split.fill(sb, chunk, true); err != nil {
				return rep, err
			}
			cur := g
			if fc.OneK {
				cur = oneK[ks[lo/fc.Batch]]
			}
			fillADMGraph(cur, sb, fc.Bootstrap)
			var w float64
			for _, v := range cur.Weight {
				w += float64(v)
			}
			if w == 0 {
				continue
			}
			nll, err := admStep(tr, cur, opt)
			if err != nil {
				return rep, err
			}
			steps++
			total++
			if tr == nil { // the device trainer sums Σw·NLL itself
				nllSum += float64(nll) * w
			}
			wSum += w
		}
		var drop *evalDropout
		if fc.HoldoutDropout && fc.Dropout > 0 {
			drop = &evalDropout{p: fc.Dropout, seed: rng.Int63()}
		}
		if err := pullADM(tr, m, opt, g, &nllSum); err != nil {
			return rep, err
		}
		ev, err := evaluateADM(m, split, holdStarts, fc.EvalRows, false, fc.Bootstrap, scale, drop)
		if err != nil {
			return rep, err
		}
		e := ADMEpoch{Epoch: epoch, TrainNLL: nllSum / math.Max(wSum, 1), Steps: steps, Seconds: time.Since(start).Seconds()}
		e.HoldoutMSE, e.HoldoutNLL, e.HoldoutMSEPerK, e.HoldoutNLLPerK = ev.summary()
		e.HoldoutScaledMSE = ev.scaledMSE()
		rep.History = append(rep.History, e)
		rep.Curve = append(rep.Curve, FitEpoch{Epoch: epoch, AdamSteps: total, TrainLoss: e.TrainNLL, HoldoutLoss: e.HoldoutMSE,
			HoldoutPerK: e.HoldoutMSEPerK, StopMetric: e.HoldoutScaledMSE, Seconds: e.Seconds})
		if fc.OnEpoch != nil {
			fc.OnEpoch(rep.Curve[len(rep.Curve)-1])
		}
		if math.IsNaN(e.HoldoutMSE) || math.IsNaN(e.TrainNLL) {
			return rep, fmt.Errorf("dynamics: ADM fit diverged at epoch %d (train NLL %v, holdout MSE %v)", epoch, e.TrainNLL, e.HoldoutMSE)
		}
		improved := e.HoldoutScaledMSE < bestMSE*(1-fc.MinRelGain)
		if fc.AuthorsImprove && !math.IsInf(bestMSE, 1) {
			improved = authorsImproved(rep.Best.HoldoutMSEPerK, e.HoldoutMSEPerK)
		}
		if improved || math.IsInf(bestMSE, 1) {
			bestMSE, rep.Best, since = e.HoldoutScaledMSE, e, 0
			if err := best.CopyFrom(m); err != nil {
				return rep, err
			}
		} else if since++; since >= fc.Patience {
			break
		}
	}
	if err := m.CopyFrom(best); err != nil {
		return rep, err
	}
	rep.Epochs = len(rep.History)
	rep.TrainLoss = rep.History[len(rep.History)-1].TrainNLL
	rep.HoldoutLoss = rep.Best.HoldoutMSE
	rep.HoldoutPerK = rep.Best.HoldoutMSEPerK
	rep.HoldoutNLLPerK = rep.Best.HoldoutNLLPerK
	if fc.TrainEval > 0 {
		starts := rng.Perm(split.nTrain)
		starts = starts[:min(fc.TrainEval, len(starts))]
		ev, err := evaluateADM(m, split, starts, fc.EvalRows, true, fc.Bootstrap, nil, nil)
		if err != nil {
			return rep, err
		}
		_, _, rep.TrainMSEPerK, rep.TrainNLLPerK = ev.summary()
	}
	return rep, nil
}

// newADMTrainer opens a device trainer of m's size with fc's batch,
// learning rate and dropout, the dropout stream at seed (as the CPU graph's)
// and m's weights.
func newADMTrainer(d device.Device, m *models.ADM, fc ADMFitConfig, seed int64) (*admdev.Trainer, error) {
	c := m.Cfg
	eps := float32(1e-5)
	for i, b := range m.Blocks {
		if i > 0 && b.Norm.Eps != eps {
			return nil, fmt.Errorf("dynamics: ADM blocks have LayerNorm eps %v and %v; the device step takes one", eps, b.Norm.Eps)
		}
		eps = b.Norm.Eps
	}
	tr, err := admdev.New(d, admdev.Config{ObsDim: c.ObsDim, ActDim: c.ActDim, Hidden: c.Hidden, Layers: c.Layers,
		ResBlocks: c.ResBlocks, M: c.M, Batch: fc.Batch, LR: float64(fc.LR), Dropout: fc.Dropout, Eps: eps,
		Graph: fc.DeviceGraph}, seed)
	if err != nil {
		return nil, fmt.Errorf("dynamics: ADM fit on %s: %w", d.Name(), err)
	}
	if err := tr.SetWeights(m.TrainedTensors()); err != nil {
		_ = tr.Close()
		return nil, fmt.Errorf("dynamics: ADM fit on %s: %w", d.Name(), err)
	}
	return tr, nil
}

// admStep runs one train step on g's inputs (g an all-k or a one-k graph
// of the model opt trains), on the device trainer tr when there is one, and
// returns its NLL; the device's step returns 0 and reads
// nothing back (it adds Σw·NLL to its NLLSum).
func admStep(tr *admdev.Trainer, g *models.ADMGraph, opt *models.Adam) (float32, error) {
	if tr == nil {
		if err := g.Run(); err != nil {
			return 0, err
		}
		if err := opt.StepNodes(g.Params); err != nil {
			return 0, err
		}
		_, nll, err := g.LossValue()
		return nll, err
	}
	if err := tr.Upload(admdev.Batch{X: g.X, Target: g.Target, Weight: g.Weight}); err != nil {
		return 0, err
	}
	return 0, tr.Step()
}

// pushNLLSum sets the device trainer's running Σw·NLL to v (the epoch's so
// far); without a trainer it does nothing.
func pushNLLSum(tr *admdev.Trainer, v float64) error {
	if tr == nil {
		return nil
	}
	if err := tr.SetNLLSum(v); err != nil {
		return fmt.Errorf("dynamics: ADM fit: %w", err)
	}
	return nil
}

// pullADM copies the device trainer's weights into m, its Adam state into
// opt, its dropout stream's state into g and its running Σw·NLL into
// nllSum, so that evaluations and snapshots see the fit's state; without a
// trainer it does nothing.
func pullADM(tr *admdev.Trainer, m *models.ADM, opt *models.Adam, g *models.ADMGraph, nllSum *float64) error {
	if tr == nil {
		return nil
	}
	s, err := tr.NLLSum()
	if err != nil {
		return fmt.Errorf("dynamics: ADM fit: %w", err)
	}
	*nllSum = s
	if err := tr.WeightsInto(m.TrainedTensors()); err != nil {
		return fmt.Errorf("dynamics: ADM fit: %w", err)
	}
	o := device.AdamState{M: opt.M, V: opt.V}
	if err := tr.OptimInto(&o); err != nil {
		return fmt.Errorf("dynamics: ADM fit: %w", err)
	}
	opt.T = o.T
	g.SetDropoutState(tr.DropoutState())
	return nil
}
