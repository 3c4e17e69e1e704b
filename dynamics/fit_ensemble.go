package dynamics

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/ensdev"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// EnsembleFitConfig configures FitEnsemble. DefaultEnsembleFitConfig holds
// MBPO's values.
type EnsembleFitConfig struct {
	LR          float32 // Adam learning rate (1e-3)
	Batch       int     // rows per member per train step (256)
	HoldoutFrac float64 // random holdout share (0.2) ...
	MaxHoldout  int     // ... capped at this many transitions (5000; MOPO 1000)
	Patience    int     // stop after this many epochs in which no member improved (5)
	MinRelGain  float64 // a member improves when its holdout MSE falls by this fraction (0.01)
	MaxEpochs   int     // cap on epochs (0: none)
	MaxSteps    int     // cap on train steps per epoch (0: a full pass)
	// MaxTotalSteps caps the Adam steps of the whole fit (0: none); the
	// epoch it runs out in ends there and is evaluated as usual.
	MaxTotalSteps int
	Elites        int       // members kept for roll-outs, best holdout MSE first (5)
	Decay         []float64 // per-layer weight decay (models.EnsembleDecay); nil for none
	Reinit        bool      // re-draw the weights before fitting (MBPO keeps training: false)
	// OnEpoch, when set, is called after every epoch with its point of
	// FitReport.Curve.
	OnEpoch func(FitEpoch)
	// Resume, when set, snapshots the fit and continues it from
	// Resume.From (see FitResume).
	Resume *FitResume
	// Device, when set, runs the train steps there (package ensdev: the
	// same step as the CPU graph's); the weights, the Adam state and the
	// epoch's train NLL come back to the host for every holdout evaluation
	// and snapshot. The caller keeps it open and does not use it
	// concurrently.
	Device device.Device
	// DeviceGraph records the device's train step once as a device graph
	// and replays it (ensdev.Config.Graph; Device must be a
	// device.Capturer).
	DeviceGraph bool
}

// DefaultEnsembleFitConfig returns MBPO's fit settings.
func DefaultEnsembleFitConfig() EnsembleFitConfig {
	return EnsembleFitConfig{LR: 1e-3, Batch: 256, HoldoutFrac: 0.2, MaxHoldout: 5000, Patience: 5,
		MinRelGain: 0.01, Elites: 5, Decay: models.EnsembleDecay}
}

// EnsembleEpoch records one epoch of an ensemble fit.
type EnsembleEpoch struct {
	Epoch      int
	TrainNLL   []float64 // per member, mean over the epoch's batches
	HoldoutMSE []float64 // per member
	Steps      int       // Adam steps in the epoch
	Seconds    float64   // wall time since the fit started, after the epoch's holdout check
}

// EnsembleFitReport is a FitReport with per-member results. HoldoutLoss is
// the mean holdout MSE of the elites; HoldoutPerK has that one value.
type EnsembleFitReport struct {
	FitReport
	MemberHoldoutMSE []float64 // kept weights, per member
	Elites           []int
	History          []EnsembleEpoch
}

// transitions is a flat copy of a buffer's transitions.
type transitions struct {
	n, od, ad      int
	obs, act, next []float32
	rew            []float32
}

func loadTransitions(data *buffer.Replay) (*transitions, error) {
	n, od, ad := data.Len(), data.ObsDim, data.ActDim
	tr := &transitions{n: n, od: od, ad: ad, obs: make([]float32, n*od), act: make([]float32, n*ad),
		next: make([]float32, n*od), rew: make([]float32, n)}
	sb := buffer.NewSeqBatch(1, 1, od, ad)
	for k := 0; k < n; k++ {
		if err := data.SequenceAt(k, sb, 0); err != nil {
			return nil, err
		}
		copy(tr.obs[k*od:], sb.Obs0)
		copy(tr.act[k*ad:], sb.Act)
		copy(tr.next[k*od:], sb.NextObs)
		tr.rew[k] = sb.Rew[0]
	}
	return tr, nil
}

// fitNormalizerRows z-scores [obs, act] over the given transitions.
func (tr *transitions) fitNormalizerRows(rows []int, n *models.Normalizer) {
	in := tr.od + tr.ad
	sum := make([]float64, in)
	sq := make([]float64, in)
	for _, k := range rows {
		for j := 0; j < in; j++ {
			var v float64
			if j < tr.od {
				v = float64(tr.obs[k*tr.od+j])
			} else {
				v = float64(tr.act[k*tr.ad+j-tr.od])
			}
			sum[j] += v
			sq[j] += v * v
		}
	}
	c := float64(len(rows))
	for j := range sum {
		mean := sum[j] / c
		std := math.Sqrt(math.Max(sq[j]/c-mean*mean, 0))
		if std < 1e-12 {
			std = 1
		}
		n.Mean[j], n.Std[j] = float32(mean), float32(std)
	}
}

// fillRows writes normalised inputs, targets and weights of the given rows
// (padding the rest with weight 0).
func (tr *transitions) fillRows(rows []int, norm *models.Normalizer, x, target, weight []float32) {
	od, ad := tr.od, tr.ad
	in, d := od+ad, od+1
	for r := range weight {
		xr, tg := x[r*in:(r+1)*in], target[r*d:(r+1)*d]
		if r >= len(rows) {
			clear(xr)
			clear(tg)
			weight[r] = 0
			continue
		}
		k := rows[r]
		copy(xr[:od], tr.obs[k*od:(k+1)*od])
		copy(xr[od:], tr.act[k*ad:(k+1)*ad])
		for j := range xr {
			xr[j] = (xr[j] - norm.Mean[j]) / norm.Std[j]
		}
		for j := 0; j < od; j++ {
			tg[j] = tr.next[k*od+j] - tr.obs[k*od+j]
		}
		tg[od] = tr.rew[k]
		weight[r] = 1
	}
}

// memberMSE is member i's mean squared error of the mean over rows and the
// ObsDim+1 target dims.
func (tr *transitions) memberMSE(e *models.Ensemble, i int, rows []int, s *models.Scratch) (float64, error) {
	od, ad := tr.od, tr.ad
	d := od + 1
	const chunk = 2048
	obs := make([]float32, chunk*od)
	act := make([]float32, chunk*ad)
	mean := make([]float32, chunk*d)
	lv := make([]float32, chunk*d)
	var se float64
	for lo := 0; lo < len(rows); lo += chunk {
		part := rows[lo:min(lo+chunk, len(rows))]
		n := len(part)
		for r, k := range part {
			copy(obs[r*od:(r+1)*od], tr.obs[k*od:(k+1)*od])
			copy(act[r*ad:(r+1)*ad], tr.act[k*ad:(k+1)*ad])
		}
		if err := e.PredictMember(i, obs[:n*od], act[:n*ad], mean[:n*d], lv[:n*d], s); err != nil {
			return 0, err
		}
		for r, k := range part {
			for j := 0; j < d; j++ {
				var tg float64
				if j < od {
					tg = float64(tr.next[k*od+j]) - float64(tr.obs[k*od+j])
				} else {
					tg = float64(tr.rew[k])
				}
				e := float64(mean[r*d+j]) - tg
				se += e * e
			}
		}
	}
	return se / float64(len(rows)*d), nil
}

// FitEnsemble fits every member of e on the buffer as MBPO does: a random
// holdout of min(HoldoutFrac·n, MaxHoldout) transitions, the normaliser
// from the training inputs, every member on its own permutation of the
// training data each epoch (Gaussian NLL, bound terms, per-layer weight
// decay; Adam), a member's weights kept whenever its holdout MSE improves by
// more than MinRelGain, and a stop after Patience epochs without any member
// improving. The best weights of each member are restored and the Elites
// members with the lowest holdout MSE become e.Elites.
//
// A cancelled ctx stops the fit within one Adam step and returns ctx's
// error; e is then left part-trained. With fc.Resume the fit hands out
// snapshots and continues from one (FitResume).
func FitEnsemble(ctx context.Context, e *models.Ensemble, data *buffer.Replay, fc EnsembleFitConfig, rng *rand.Rand) (EnsembleFitReport, error) {
	var rep EnsembleFitReport
	if data.ObsDim != e.ObsDim || data.ActDim != e.ActDim {
		return rep, fmt.Errorf("dynamics: ensemble dims %d/%d, buffer %d/%d", e.ObsDim, e.ActDim, data.ObsDim, data.ActDim)
	}
	nm := len(e.Members)
	if fc.Batch <= 0 || fc.LR <= 0 || fc.Patience <= 0 || fc.Elites <= 0 || fc.Elites > nm {
		return rep, fmt.Errorf("dynamics: invalid ensemble fit config %+v for %d members", fc, nm)
	}
	tr, err := loadTransitions(data)
	if err != nil {
		return rep, err
	}
	hold := min(int(fc.HoldoutFrac*float64(tr.n)), fc.MaxHoldout)
	if fc.HoldoutFrac > 0 && hold < 1 {
		hold = 1
	}
	if tr.n-hold < 1 || hold < 1 {
		return rep, fmt.Errorf("dynamics: ensemble fit needs train and holdout data, have %d transitions", tr.n)
	}
	rs := fc.Resume
	if err := rs.check(); err != nil {
		return rep, err
	}
	var from *ckpt.File
	var pr *fitProgress
	var splitRNG []byte
	if rs != nil {
		if rs.From != nil {
			if from, pr, err = decodeSnapshot(rs.From, "ensemble", tr.n); err != nil {
				return rep, err
			}
			if err := rs.Source.UnmarshalBinary(pr.SplitRNG); err != nil {
				return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
			}
		}
		if splitRNG, err = rs.Source.MarshalBinary(); err != nil {
			return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
	}
	perm := rng.Perm(tr.n)
	holdRows, trainRows := perm[:hold], perm[hold:]
	if pr != nil {
		if err := restoreEnsemble(from, "model", e); err != nil {
			return rep, err
		}
	} else {
		if fc.Reinit {
			fresh := models.NewEnsemble(e.ObsDim, e.ActDim, nm, hiddenSizes(&e.Members[0]), rng)
			for i := range e.Members {
				if err := e.CopyMember(i, fresh, i); err != nil {
					return rep, err
				}
			}
		}
		tr.fitNormalizerRows(trainRows, &e.Norm)
	}
	g, err := models.NewEnsembleTrainGraph(e, fc.Batch, fc.Decay)
	if err != nil {
		return rep, err
	}
	defer g.Close()
	opt := models.NewAdam(g.Params, fc.LR)
	var scratch models.Scratch
	best := e.Clone()
	bestMSE := make([]float64, nm)
	for i := range bestMSE {
		bestMSE[i] = math.Inf(1) // as MBPO: the first epoch always counts as an improvement
	}
	rep.HoldoutCount = hold
	since, total := 0, 0
	start := time.Now()
	first := 1
	if pr != nil {
		if err := restoreEnsemble(from, "best", best); err != nil {
			return rep, err
		}
		if err := restoreAdam(from, pr, opt); err != nil {
			return rep, err
		}
		if len(pr.BestMSEs) != nm || len(pr.TrainNLL) != nm {
			return rep, fmt.Errorf("dynamics: fit snapshot of %d members, the ensemble has %d", len(pr.BestMSEs), nm)
		}
		if err := rs.Source.UnmarshalBinary(pr.RNG); err != nil {
			return rep, fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
		copy(bestMSE, pr.BestMSEs)
		since, total = pr.Since, pr.TotalStart
		rep.History, rep.Curve = pr.EnsHistory, pr.Curve
		start = start.Add(-time.Duration(pr.Seconds * float64(time.Second)))
		first = pr.Epoch
	}
	var dt *ensdev.Trainer
	if fc.Device != nil {
		if dt, err = newEnsembleTrainer(fc.Device, e, fc, opt); err != nil {
			return rep, err
		}
		defer dt.Close()
	}
	// snapshot encodes the fit's state in epoch before step pos, the
	// epoch's train NLL sums so far in nll (over epochSteps steps; read
	// back from the device trainer, if any).
	totalStart, epochSteps := 0, 0
	snapshot := func(epoch, pos int, nll []float64, rngState []byte) ([]byte, error) {
		if err := pullEnsemble(dt, e, opt, nll, epochSteps); err != nil {
			return nil, err
		}
		p := &fitProgress{Kind: "ensemble", DataN: tr.n, Epoch: epoch, Pos: pos, TotalStart: totalStart, Total: total,
			Since: since, Seconds: time.Since(start).Seconds(), RNG: rngState, SplitRNG: splitRNG,
			TrainNLL: slices.Clone(nll), BestMSEs: bestMSE, EnsHistory: rep.History, Curve: rep.Curve}
		return encodeSnapshot(p, opt, func(f *ckpt.File) error {
			if err := models.PutEnsemble(f, "model", e); err != nil {
				return err
			}
			return models.PutEnsemble(f, "best", best)
		})
	}
	for epoch := first; (fc.MaxEpochs <= 0 || epoch <= fc.MaxEpochs) && (fc.MaxTotalSteps <= 0 || total < fc.MaxTotalSteps); epoch++ {
		totalStart, epochSteps = total, 0
		rngState, err := rs.epochStart(epoch, first, func(st []byte) ([]byte, error) {
			return snapshot(epoch, 0, make([]float64, nm), st)
		})
		if err != nil {
			return rep, err
		}
		orders := make([][]int, nm)
		for i := range orders {
			o := rng.Perm(len(trainRows))
			for j, v := range o {
				o[j] = trainRows[v]
			}
			orders[i] = o
		}
		steps := (len(trainRows) + fc.Batch - 1) / fc.Batch
		if fc.MaxSteps > 0 {
			steps = min(steps, fc.MaxSteps)
		}
		if fc.MaxTotalSteps > 0 {
			steps = min(steps, fc.MaxTotalSteps-total)
		}
		total += steps
		epochSteps = steps
		ep := EnsembleEpoch{Epoch: epoch, TrainNLL: make([]float64, nm), HoldoutMSE: make([]float64, nm), Steps: steps}
		s0 := 0
		if pr != nil && epoch == first { // continue the snapshot's epoch
			s0 = pr.Pos
			copy(ep.TrainNLL, pr.TrainNLL)
		}
		if err := pushNLLSums(dt, ep.TrainNLL, steps); err != nil {
			return rep, err
		}
		for s := s0; s < steps; s++ {
			if err := ctx.Err(); err != nil {
				return rep, rs.interrupted("ensemble", epoch, err, func() ([]byte, error) {
					return snapshot(epoch, s, ep.TrainNLL, rngState)
				})
			}
			for i := range orders {
				rows := orders[i][s*fc.Batch : min((s+1)*fc.Batch, len(orders[i]))]
				tr.fillRows(rows, &e.Norm, g.X[i], g.Target[i], g.Weight[i])
			}
			if dt != nil { // the device trainer sums each member's NLL itself
				if err := dt.Upload(ensdev.Batch{X: g.X, Target: g.Target, Weight: g.Weight}); err != nil {
					return rep, fmt.Errorf("dynamics: ensemble fit: %w", err)
				}
				if err := dt.Step(); err != nil {
					return rep, fmt.Errorf("dynamics: ensemble fit: %w", err)
				}
				continue
			}
			if err := g.Run(); err != nil {
				return rep, err
			}
			if err := opt.Step(); err != nil {
				return rep, err
			}
			_, nll, err := g.LossValue()
			if err != nil {
				return rep, err
			}
			for i, v := range nll {
				ep.TrainNLL[i] += float64(v) / float64(steps)
			}
		}
		if err := pullEnsemble(dt, e, opt, ep.TrainNLL, steps); err != nil {
			return rep, err
		}
		improved := false
		for i := 0; i < nm; i++ {
			mse, err := tr.memberMSE(e, i, holdRows, &scratch)
			if err != nil {
				return rep, err
			}
			if math.IsNaN(mse) {
				return rep, fmt.Errorf("dynamics: ensemble member %d diverged at epoch %d", i, epoch)
			}
			ep.HoldoutMSE[i] = mse
			if math.IsInf(bestMSE[i], 1) || (bestMSE[i]-mse)/bestMSE[i] > fc.MinRelGain {
				bestMSE[i] = mse
				improved = true
				if err := best.CopyMember(i, e, i); err != nil {
					return rep, err
				}
			}
		}
		ep.Seconds = time.Since(start).Seconds()
		rep.History = append(rep.History, ep)
		rep.Curve = append(rep.Curve, ensembleCurvePoint(ep, total, fc.Elites))
		if fc.OnEpoch != nil {
			fc.OnEpoch(rep.Curve[len(rep.Curve)-1])
		}
		if improved {
			since = 0
		} else if since++; since >= fc.Patience {
			break
		}
	}
	for i := 0; i < nm; i++ {
		if err := e.CopyMember(i, best, i); err != nil {
			return rep, err
		}
	}
	order := make([]int, nm)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return bestMSE[order[a]] < bestMSE[order[b]] })
	e.Elites = append([]int(nil), order[:fc.Elites]...)
	rep.Elites = append([]int(nil), e.Elites...)
	rep.MemberHoldoutMSE = bestMSE
	rep.Epochs = len(rep.History)
	var hl float64
	for _, i := range e.Elites {
		hl += bestMSE[i] / float64(len(e.Elites))
	}
	rep.HoldoutLoss, rep.HoldoutPerK = hl, []float64{hl}
	if rep.Epochs > 0 {
		rep.TrainLoss = rep.Curve[rep.Epochs-1].TrainLoss
	}
	return rep, nil
}

// hiddenSizes returns an MLP's hidden layer widths.
func hiddenSizes(m *models.MLP) []int {
	var h []int
	for _, l := range m.Layers[:len(m.Layers)-1] {
		h = append(h, l.Out)
	}
	return h
}

// ensembleCurvePoint summarises an epoch for FitReport.Curve: the mean
// train NLL over members and the mean holdout MSE of the epoch's best
// elites members.
func ensembleCurvePoint(ep EnsembleEpoch, steps, elites int) FitEpoch {
	var tl float64
	for _, v := range ep.TrainNLL {
		tl += v / float64(len(ep.TrainNLL))
	}
	mse := append([]float64(nil), ep.HoldoutMSE...)
	sort.Float64s(mse)
	var hl float64
	for _, v := range mse[:elites] {
		hl += v / float64(elites)
	}
	return FitEpoch{Epoch: ep.Epoch, AdamSteps: steps, TrainLoss: tl, HoldoutLoss: hl, StopMetric: hl, Seconds: ep.Seconds}
}

// restoreEnsemble copies the ensemble stored under prefix of a fit
// snapshot (members, bounds, normaliser, elites) into e's existing slices,
// which the fit's graph is built over.
func restoreEnsemble(f *ckpt.File, prefix string, e *models.Ensemble) error {
	s, err := models.GetEnsemble(f, prefix)
	if err != nil {
		return fmt.Errorf("dynamics: fit snapshot: %w", err)
	}
	if len(s.Members) != len(e.Members) || len(s.Norm.Mean) != len(e.Norm.Mean) {
		return fmt.Errorf("dynamics: fit snapshot ensemble of %d members, the model has %d", len(s.Members), len(e.Members))
	}
	for i := range e.Members {
		if err := e.CopyMember(i, s, i); err != nil {
			return fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
	}
	copy(e.Norm.Mean, s.Norm.Mean)
	copy(e.Norm.Std, s.Norm.Std)
	e.Elites = s.Elites
	return nil
}

// newEnsembleTrainer opens a device trainer of e's size with fc's batch,
// learning rate and weight decay, e's weights and opt's Adam state.
func newEnsembleTrainer(d device.Device, e *models.Ensemble, fc EnsembleFitConfig, opt *models.Adam) (*ensdev.Trainer, error) {
	tr, err := ensdev.New(d, ensdev.Config{ObsDim: e.ObsDim, ActDim: e.ActDim, Hidden: hiddenSizes(&e.Members[0]),
		Members: len(e.Members), Batch: fc.Batch, LR: float64(fc.LR), Decay: fc.Decay, Graph: fc.DeviceGraph})
	if err != nil {
		return nil, fmt.Errorf("dynamics: ensemble fit on %s: %w", d.Name(), err)
	}
	if err := tr.SetWeights(e.TrainedTensors()); err != nil {
		_ = tr.Close()
		return nil, fmt.Errorf("dynamics: ensemble fit on %s: %w", d.Name(), err)
	}
	if err := tr.SetOptim(device.AdamState{M: opt.M, V: opt.V, T: opt.T}); err != nil {
		_ = tr.Close()
		return nil, fmt.Errorf("dynamics: ensemble fit on %s: %w", d.Name(), err)
	}
	return tr, nil
}

// pushNLLSums sets the device trainer's per-member NLL sums to the epoch's
// so far, nll (each a sum over the epoch's steps divided by steps); without
// a trainer it does nothing.
func pushNLLSums(tr *ensdev.Trainer, nll []float64, steps int) error {
	if tr == nil {
		return nil
	}
	s := make([]float64, len(nll))
	for i, v := range nll {
		s[i] = v * float64(steps)
	}
	if err := tr.SetNLLSums(s); err != nil {
		return fmt.Errorf("dynamics: ensemble fit: %w", err)
	}
	return nil
}

// pullEnsemble copies the device trainer's weights into e, its Adam state
// into opt and, with steps > 0, its per-member NLL sums divided by steps
// into nll, so that evaluations and snapshots see the fit's state; without
// a trainer it does nothing.
func pullEnsemble(tr *ensdev.Trainer, e *models.Ensemble, opt *models.Adam, nll []float64, steps int) error {
	if tr == nil {
		return nil
	}
	if err := tr.WeightsInto(e.TrainedTensors()); err != nil {
		return fmt.Errorf("dynamics: ensemble fit: %w", err)
	}
	o := device.AdamState{M: opt.M, V: opt.V}
	if err := tr.OptimInto(&o); err != nil {
		return fmt.Errorf("dynamics: ensemble fit: %w", err)
	}
	opt.T = o.T
	if steps <= 0 {
		return nil
	}
	s, err := tr.NLLSums()
	if err != nil {
		return fmt.Errorf("dynamics: ensemble fit: %w", err)
	}
	if len(s) != len(nll) {
		return fmt.Errorf("dynamics: ensemble fit: %d member NLL sums, want %d", len(s), len(nll))
	}
	for i, v := range s {
		nll[i] = v / float64(steps)
	}
	return nil
}
