package testfix

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/models"
)

// The float64 reference roll-out: lockstep over steps and rows with
// explicit, unbounded per-row histories, following the documented RNG order
// (per chunk and step: policy noise for every alive row, then every alive
// row's discrete draw, then obs_dim+1 normals per alive row), with the model
// evaluated by the float64 reference above. Engines are checked against it.

// RefPolicy is a roll-out's policy: the actions act [n, ad] for the
// observations obs [n, od] and, unless nil, the noise [n, ad] (nil: the
// deterministic policy). (*infer.Policy).Act is one; ActorPolicy gives the
// float64 reference actor as one.
type RefPolicy func(obs, noise, act []float32) error

// ActorPolicy is RefActor as a RefPolicy: the float64 actor, its actions
// rounded to float32.
func ActorPolicy(a *models.Actor) RefPolicy {
	return func(obs, noise, act []float32) error {
		out := RefActor(a, obs, noise)
		if len(out) != len(act) {
			return fmt.Errorf("testfix: the actor gives %d action values for %d observation values, want %d", len(out), len(obs), len(act))
		}
		for i, v := range out {
			act[i] = float32(v)
		}
		return nil
	}
}

// RefHist is one row's full history: states s_0..s_t and the actions taken
// from them (len(Acts) = len(States) once the current action is chosen).
type RefHist struct {
	States, Acts [][]float32
}

// RefPred is one row's model prediction.
type RefPred struct {
	Next []float64 // mean next observation
	Rew  float64   // mean reward
	LV   []float64 // log-variance of [next obs, reward]
	U    float64   // uncertainty (when wanted)
}

// RefModel is the model-specific part of RefRollout.
type RefModel struct {
	// Draw draws a row's model choice (backtracking length or member).
	Draw func(h *RefHist, rng *rand.Rand) int
	// Predict is a row's prediction with the drawn choice at a roll-out
	// step for a start row (the MC-dropout key; other models ignore both).
	Predict func(h *RefHist, choice int, wantU bool, step, row int) RefPred
	// Back is the backtracking length a choice predicts with.
	Back func(choice int) int32
	// Begin, unless nil, draws first, once per roll-out (MC dropout's
	// mask seed).
	Begin func(rng *rand.Rand)
}

// RefRollout is the reference roll-out of policy in mod from start (obs of
// od, actions of ad values) under cfg, drawing from rng; cfg.ChunkRows 0 is
// 8192, infer's CPU default. A policy error fails t.
func RefRollout(t testing.TB, policy RefPolicy, start *rollout.Start, od, ad int, cfg rollout.RollConfig, rng *rand.Rand, mod RefModel) *rollout.Transitions {
	t.Helper()
	chunk := cfg.ChunkRows
	if chunk <= 0 {
		chunk = 8192
	}
	wantU := cfg.WantU || cfg.Penalty != 0
	doneFn, err := cfg.DoneFunc(od)
	if err != nil {
		t.Fatalf("reference roll-out: %v", err)
	}
	out := &rollout.Transitions{}
	if mod.Begin != nil {
		mod.Begin(rng)
	}
	for lo := 0; lo < start.N; lo += chunk {
		hi := min(lo+chunk, start.N)
		hs := make([]*RefHist, hi-lo)
		for r := range hs {
			i := lo + r
			h := &RefHist{}
			for j := 0; j < start.Len[i]; j++ {
				o := (i*start.M + j) * od
				h.States = append(h.States, append([]float32(nil), start.Obs[o:o+od]...))
			}
			for j := 0; j+1 < start.Len[i]; j++ {
				o := (i*(start.M-1) + j) * ad
				h.Acts = append(h.Acts, append([]float32(nil), start.Act[o:o+ad]...))
			}
			hs[r] = h
		}
		alive := make([]int, len(hs))
		for r := range alive {
			alive[r] = r
		}
		for step := 0; step < cfg.Horizon && len(alive) > 0; step++ {
			n := len(alive)
			obs := make([]float32, 0, n*od)
			for _, r := range alive {
				obs = append(obs, hs[r].States[len(hs[r].States)-1]...)
			}
			var noise []float32
			if !cfg.DeterministicPolicy {
				for range alive {
					for j := 0; j < ad; j++ {
						noise = append(noise, float32(rng.NormFloat64()))
					}
				}
			}
			act := make([]float32, n*ad)
			if err := policy(obs, noise, act); err != nil {
				t.Fatalf("reference roll-out: policy: %v", err)
			}
			for q, r := range alive {
				hs[r].Acts = append(hs[r].Acts, act[q*ad:(q+1)*ad])
			}
			choice := make([]int, n)
			for q, r := range alive {
				choice[q] = mod.Draw(hs[r], rng)
			}
			preds := make([]RefPred, n)
			for q, r := range alive {
				preds[q] = mod.Predict(hs[r], choice[q], wantU, step, lo+r)
			}
			var still []int
			for q, r := range alive {
				pr := preds[q]
				next := make([]float32, od)
				for d := 0; d < od; d++ {
					next[d] = float32(pr.Next[d] + math.Exp(0.5*pr.LV[d])*rng.NormFloat64())
				}
				rew := pr.Rew + math.Exp(0.5*pr.LV[od])*rng.NormFloat64()
				var u float64
				if wantU {
					u = pr.U
					rew -= float64(cfg.Penalty) * u
				}
				done := false
				for _, v := range next {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						done = true
					}
				}
				done = done || (doneFn != nil && doneFn(next))
				out.Obs = append(out.Obs, obs[q*od:(q+1)*od]...)
				out.Act = append(out.Act, act[q*ad:(q+1)*ad]...)
				out.Rew = append(out.Rew, float32(rew))
				out.NextObs = append(out.NextObs, next...)
				if cfg.WantMean {
					for _, v := range pr.Next {
						out.MeanNextObs = append(out.MeanNextObs, float32(v))
					}
				}
				out.Done = append(out.Done, done)
				out.Uncertainty = append(out.Uncertainty, float32(u))
				out.Step = append(out.Step, int32(step))
				out.Back = append(out.Back, mod.Back(choice[q]))
				out.N++
				if !done {
					hs[r].States = append(hs[r].States, next)
					still = append(still, r)
				}
			}
			alive = still
		}
	}
	return out
}

// RefADMModel is ADM-Roll: k uniform in 1..min(history, m); the k-step plan
// runs from the state k-1 steps back through the last k actions; U^ADM is
// sqrt(mean over dims of the population variance over k of the means).
func RefADMModel(a *models.ADM) RefModel {
	return refADM(a, func(h *RefHist, k, _, _ int) ([]float64, float64, []float64) {
		c := len(h.States) - 1
		return ADMPredict(a, h.States[c-k+1], h.Acts[c-k+1:c+1], nil)
	}, nil)
}

// RefADMDropModel is RefADMModel with MC dropout p: the roll-out's seed is
// its first draw, and the k-step plan of start row r at step t runs with
// the masks of rollout.DropoutKeep(seed, t, r, k) (DropMult), for the
// chosen k and for every k of U^ADM alike.
func RefADMDropModel(a *models.ADM, p float64) RefModel {
	var seed int64
	return refADM(a, func(h *RefHist, k, step, row int) ([]float64, float64, []float64) {
		c := len(h.States) - 1
		return ADMPredict(a, h.States[c-k+1], h.Acts[c-k+1:c+1], DropMult(a, seed, step, row, k, p))
	}, func(rng *rand.Rand) { seed = rng.Int63() })
}

// refADM is ADM-Roll's RefModel over plan, the prediction of a row's
// k-step plan at a roll-out step for a start row; begin is its Begin.
func refADM(a *models.ADM, plan func(h *RefHist, k, step, row int) ([]float64, float64, []float64), begin func(*rand.Rand)) RefModel {
	m := a.Cfg.M
	return RefModel{
		Draw: func(h *RefHist, rng *rand.Rand) int {
			return 1 + rng.Intn(min(len(h.States), m))
		},
		Back: func(k int) int32 { return int32(k) },
		Predict: func(h *RefHist, k int, wantU bool, step, row int) RefPred {
			next, rew, lv := plan(h, k, step, row)
			pr := RefPred{Next: next, Rew: rew, LV: lv}
			if wantU {
				var all [][]float64
				for j := 1; j <= min(len(h.States), m); j++ {
					nj, _, _ := plan(h, j, step, row)
					all = append(all, nj)
				}
				pr.U = PopStdMean(all)
			}
			return pr
		},
		Begin: begin,
	}
}

// DropMult is the reference's dropout multipliers for one plan:
// rollout.DropoutKeep's flags times 1/(1-p), per ResBlock.
func DropMult(a *models.ADM, seed int64, step, row, k int, p float64) [][]float64 {
	H := a.Cfg.Hidden
	keep := make([]float32, a.Cfg.ResBlocks*H)
	rollout.DropoutKeep(seed, step, row, k, p, keep)
	out := make([][]float64, a.Cfg.ResBlocks)
	for b := range out {
		out[b] = make([]float64, H)
		for u := range out[b] {
			out[b][u] = float64(keep[b*H+u]) / (1 - p)
		}
	}
	return out
}

// PopStdMean is sqrt(mean over dims of the population variance over rows).
func PopStdMean(rows [][]float64) float64 {
	od := len(rows[0])
	var total float64
	for d := 0; d < od; d++ {
		var mean float64
		for _, r := range rows {
			mean += r[d]
		}
		mean /= float64(len(rows))
		var v float64
		for _, r := range rows {
			v += (r[d] - mean) * (r[d] - mean)
		}
		total += v / float64(len(rows))
	}
	return math.Sqrt(total / float64(od))
}

// RefEnsembleModel is MBPO/MOPO: a uniformly drawn elite per row; next =
// obs + mean delta; U = max over all members of ||exp(lv/2)|| over
// [obs, reward].
func RefEnsembleModel(e *models.Ensemble) RefModel {
	return RefModel{
		Draw: func(h *RefHist, rng *rand.Rand) int {
			return e.Elites[rng.Intn(len(e.Elites))]
		},
		Back: func(int) int32 { return 1 },
		Predict: func(h *RefHist, k int, wantU bool, _, _ int) RefPred {
			s := h.States[len(h.States)-1]
			a := h.Acts[len(h.Acts)-1]
			mean, lv := EnsembleMember(e, k, F64(s), F64(a))
			pr := RefPred{Next: make([]float64, e.ObsDim), Rew: mean[e.ObsDim], LV: lv}
			for d := range pr.Next {
				pr.Next[d] = float64(s[d]) + mean[d]
			}
			if wantU {
				for j := range e.Members {
					_, lvj := EnsembleMember(e, j, F64(s), F64(a))
					var ss float64
					for _, v := range lvj {
						ss += math.Exp(v)
					}
					pr.U = math.Max(pr.U, math.Sqrt(ss))
				}
			}
			return pr
		},
	}
}

// RandStart makes n start rows of window m (obs of od, actions of ad
// values) with lengths lens(i): states 0.5·N(0, 1), actions U(-1, 1).
func RandStart(rng *rand.Rand, n, m, od, ad int, lens func(i int) int) *rollout.Start {
	s := &rollout.Start{N: n, M: m, Len: make([]int, n), Obs: make([]float32, n*m*od)}
	if m > 1 {
		s.Act = make([]float32, n*(m-1)*ad)
	}
	for i := 0; i < n; i++ {
		s.Len[i] = lens(i)
		for j := 0; j < s.Len[i]; j++ {
			for d := 0; d < od; d++ {
				s.Obs[(i*m+j)*od+d] = float32(0.5 * rng.NormFloat64())
			}
			if j+1 < s.Len[i] {
				for d := 0; d < ad; d++ {
					s.Act[(i*(m-1)+j)*ad+d] = float32(2*rng.Float64() - 1)
				}
			}
		}
	}
	return s
}

// CloseTo reports whether got is within tol of want, relative to
// max(1, |want|).
func CloseTo(got, want float32, tol float64) bool {
	g, w := float64(got), float64(want)
	return math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))
}

// DiffTransitions describes the first difference between two roll-outs
// (sizes, done flags, steps and backtracking lengths exactly, values within
// tol by CloseTo), or returns "".
func DiffTransitions(got, want *rollout.Transitions, od, ad int, tol float64) string {
	if got.N != want.N {
		return fmt.Sprintf("%d transitions, want %d", got.N, want.N)
	}
	for name, l := range map[string][2]int{
		"Obs": {len(got.Obs), got.N * od}, "Act": {len(got.Act), got.N * ad}, "Rew": {len(got.Rew), got.N},
		"NextObs": {len(got.NextObs), got.N * od}, "Done": {len(got.Done), got.N},
		"Uncertainty": {len(got.Uncertainty), got.N}, "Step": {len(got.Step), got.N}, "Back": {len(got.Back), got.N},
		"MeanNextObs": {len(got.MeanNextObs), len(want.MeanNextObs)},
	} {
		if l[0] != l[1] {
			return fmt.Sprintf("%s has %d values, want %d", name, l[0], l[1])
		}
	}
	for i := 0; i < got.N; i++ {
		if got.Step[i] != want.Step[i] || got.Done[i] != want.Done[i] || got.Back[i] != want.Back[i] {
			return fmt.Sprintf("transition %d: step %d done %v back %d, want step %d done %v back %d",
				i, got.Step[i], got.Done[i], got.Back[i], want.Step[i], want.Done[i], want.Back[i])
		}
		for _, f := range []struct {
			name string
			g, w []float32
		}{
			{"obs", got.Obs[i*od : (i+1)*od], want.Obs[i*od : (i+1)*od]},
			{"act", got.Act[i*ad : (i+1)*ad], want.Act[i*ad : (i+1)*ad]},
			{"rew", got.Rew[i : i+1], want.Rew[i : i+1]},
			{"next", got.NextObs[i*od : (i+1)*od], want.NextObs[i*od : (i+1)*od]},
			{"uncertainty", got.Uncertainty[i : i+1], want.Uncertainty[i : i+1]},
			{"mean next", meanRow(got, i, od), meanRow(want, i, od)},
		} {
			for j := range f.g {
				if !CloseTo(f.g[j], f.w[j], tol) {
					return fmt.Sprintf("transition %d (step %d) %s[%d] = %g, want %g", i, got.Step[i], f.name, j, f.g[j], f.w[j])
				}
			}
		}
	}
	return ""
}

// meanRow is transition i's MeanNextObs, nil when tr has none.
func meanRow(tr *rollout.Transitions, i, od int) []float32 {
	if tr.MeanNextObs == nil {
		return nil
	}
	return tr.MeanNextObs[i*od : (i+1)*od]
}
