package infer_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
)

// A naive reference roll-out: lockstep over steps and rows with explicit,
// unbounded per-row histories, following the documented RNG order (per
// chunk and step: policy noise for every alive row, then every alive row's
// discrete draw, then obs_dim+1 normals per alive row), with the model
// evaluated by the float64 reference of internal/testfix.

// refHist is one row's full history: states s_0..s_t and the actions taken
// from them (len(acts) = len(states) once the current action is chosen).
type refHist struct {
	states, acts [][]float32
}

// refPred is one row's model prediction.
type refPred struct {
	next []float64 // mean next observation
	rew  float64   // mean reward
	lv   []float64 // log-variance of [next obs, reward]
	u    float64   // uncertainty (when wanted)
}

// refModel is the model-specific part of the reference.
type refModel struct {
	draw    func(h *refHist, rng *rand.Rand) int
	predict func(h *refHist, choice int, wantU bool) refPred
	back    func(choice int) int32 // the backtracking length a choice predicts with
	// With MC dropout: begin draws the roll-out's mask seed (first, once
	// per roll-out) and predictAt replaces predict, told the roll-out step
	// and the start row.
	begin     func(rng *rand.Rand)
	predictAt func(h *refHist, choice int, wantU bool, step, row int) refPred
}

func refRollout(t testing.TB, p *infer.Policy, start *infer.Start, od, ad int, cfg infer.RollConfig, rng *rand.Rand, mod refModel) *infer.Transitions {
	t.Helper()
	chunk := cfg.ChunkRows
	if chunk <= 0 {
		chunk = 8192
	}
	wantU := cfg.WantU || cfg.Penalty != 0
	out := &infer.Transitions{}
	if mod.begin != nil {
		mod.begin(rng)
	}
	for lo := 0; lo < start.N; lo += chunk {
		hi := min(lo+chunk, start.N)
		hs := make([]*refHist, hi-lo)
		for r := range hs {
			i := lo + r
			h := &refHist{}
			for j := 0; j < start.Len[i]; j++ {
				o := (i*start.M + j) * od
				h.states = append(h.states, append([]float32(nil), start.Obs[o:o+od]...))
			}
			for j := 0; j+1 < start.Len[i]; j++ {
				o := (i*(start.M-1) + j) * ad
				h.acts = append(h.acts, append([]float32(nil), start.Act[o:o+ad]...))
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
				obs = append(obs, hs[r].states[len(hs[r].states)-1]...)
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
			if err := p.Act(obs, noise, act); err != nil {
				t.Fatalf("reference roll-out: policy: %v", err)
			}
			for q, r := range alive {
				hs[r].acts = append(hs[r].acts, act[q*ad:(q+1)*ad])
			}
			choice := make([]int, n)
			for q, r := range alive {
				choice[q] = mod.draw(hs[r], rng)
			}
			preds := make([]refPred, n)
			for q, r := range alive {
				if mod.predictAt != nil {
					preds[q] = mod.predictAt(hs[r], choice[q], wantU, step, lo+r)
					continue
				}
				preds[q] = mod.predict(hs[r], choice[q], wantU)
			}
			var still []int
			for q, r := range alive {
				pr := preds[q]
				next := make([]float32, od)
				for d := 0; d < od; d++ {
					next[d] = float32(pr.next[d] + math.Exp(0.5*pr.lv[d])*rng.NormFloat64())
				}
				rew := pr.rew + math.Exp(0.5*pr.lv[od])*rng.NormFloat64()
				var u float64
				if wantU {
					u = pr.u
					rew -= float64(cfg.Penalty) * u
				}
				done := false
				for _, v := range next {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						done = true
					}
				}
				done = done || (cfg.Done != nil && cfg.Done(next))
				out.Obs = append(out.Obs, obs[q*od:(q+1)*od]...)
				out.Act = append(out.Act, act[q*ad:(q+1)*ad]...)
				out.Rew = append(out.Rew, float32(rew))
				out.NextObs = append(out.NextObs, next...)
				if cfg.WantMean {
					for _, v := range pr.next {
						out.MeanNextObs = append(out.MeanNextObs, float32(v))
					}
				}
				out.Done = append(out.Done, done)
				out.Uncertainty = append(out.Uncertainty, float32(u))
				out.Step = append(out.Step, int32(step))
				out.Back = append(out.Back, mod.back(choice[q]))
				out.N++
				if !done {
					hs[r].states = append(hs[r].states, next)
					still = append(still, r)
				}
			}
			alive = still
		}
	}
	return out
}

// refADMModel is ADM-Roll: k uniform in 1..min(history, m); the k-step plan
// runs from the state k-1 steps back through the last k actions; U^ADM is
// sqrt(mean over dims of the population variance over k of the means).
func refADMModel(a *models.ADM) refModel {
	m := a.Cfg.M
	plan := func(h *refHist, k int) ([]float64, float64, []float64) {
		c := len(h.states) - 1
		return testfix.ADMPredict(a, h.states[c-k+1], h.acts[c-k+1:c+1], nil)
	}
	return refModel{
		draw: func(h *refHist, rng *rand.Rand) int {
			return 1 + rng.Intn(min(len(h.states), m))
		},
		back: func(k int) int32 { return int32(k) },
		predict: func(h *refHist, k int, wantU bool) refPred {
			next, rew, lv := plan(h, k)
			pr := refPred{next: next, rew: rew, lv: lv}
			if wantU {
				var all [][]float64
				for j := 1; j <= min(len(h.states), m); j++ {
					nj, _, _ := plan(h, j)
					all = append(all, nj)
				}
				pr.u = popStdMean(all)
			}
			return pr
		},
	}
}

// popStdMean is sqrt(mean over dims of the population variance over rows).
func popStdMean(rows [][]float64) float64 {
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

// refEnsembleModel is MBPO/MOPO: a uniformly drawn elite per row; next =
// obs + mean delta; U = max over all members of ||exp(lv/2)|| over
// [obs, reward].
func refEnsembleModel(e *models.Ensemble) refModel {
	return refModel{
		draw: func(h *refHist, rng *rand.Rand) int {
			return e.Elites[rng.Intn(len(e.Elites))]
		},
		back: func(int) int32 { return 1 },
		predict: func(h *refHist, k int, wantU bool) refPred {
			s := h.states[len(h.states)-1]
			a := h.acts[len(h.acts)-1]
			mean, lv := testfix.EnsembleMember(e, k, testfix.F64(s), testfix.F64(a))
			pr := refPred{next: make([]float64, e.ObsDim), rew: mean[e.ObsDim], lv: lv}
			for d := range pr.next {
				pr.next[d] = float64(s[d]) + mean[d]
			}
			if wantU {
				for j := range e.Members {
					_, lvj := testfix.EnsembleMember(e, j, testfix.F64(s), testfix.F64(a))
					var ss float64
					for _, v := range lvj {
						ss += math.Exp(v)
					}
					pr.u = math.Max(pr.u, math.Sqrt(ss))
				}
			}
			return pr
		},
	}
}

// randStart makes n start rows of window m with lengths drawn from lens.
func randStart(rng *rand.Rand, n, m, od, ad int, lens func(i int) int) *infer.Start {
	s := &infer.Start{N: n, M: m, Len: make([]int, n), Obs: make([]float32, n*m*od)}
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

// closeTo reports whether got is within tol of want, relative to max(1, |want|).
func closeTo(got, want float32, tol float64) bool {
	g, w := float64(got), float64(want)
	return math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))
}

// diffTransitions describes the first difference between two roll-outs
// (done flags and steps exactly, values within tol), or returns "".
func diffTransitions(got, want *infer.Transitions, od, ad int, tol float64) string {
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
				if !closeTo(f.g[j], f.w[j], tol) {
					return fmt.Sprintf("transition %d (step %d) %s[%d] = %g, want %g", i, got.Step[i], f.name, j, f.g[j], f.w[j])
				}
			}
		}
	}
	return ""
}

// meanRow is transition i's MeanNextObs, nil when tr has none.
func meanRow(tr *infer.Transitions, i, od int) []float32 {
	if tr.MeanNextObs == nil {
		return nil
	}
	return tr.MeanNextObs[i*od : (i+1)*od]
}

// checkRef fails the test when got differs by more than 1e-4 from the
// reference roll-out of mod from start under cfg with an RNG seeded with
// seed (the seed got was rolled out with); what names got in the message.
// It returns the reference transitions.
func checkRef(t testing.TB, what string, got *infer.Transitions, p *infer.Policy, start *infer.Start, od, ad int, cfg infer.RollConfig, seed int64, mod refModel) *infer.Transitions {
	t.Helper()
	want := refRollout(t, p, start, od, ad, cfg, rand.New(rand.NewSource(seed)), mod)
	if d := diffTransitions(got, want, od, ad, 1e-4); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
	return want
}
