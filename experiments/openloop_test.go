package experiments

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/models"
)

// The open-loop evaluator on a known linear system. The truth is
// s' = A s + B a with A a rotation (|A s| = |s|); the models are
// ŝ' = c·A ŝ + B a. With zero actions every predicted state is c^g·A^t s0
// for some exponent g, so the error curve has a closed form.

type linSys struct {
	th float64
	b  []float64 // B, [2 x 1]
}

func (l linSys) rot(s []float64, times int) []float64 {
	c, sn := math.Cos(l.th*float64(times)), math.Sin(l.th*float64(times))
	return []float64{c*s[0] - sn*s[1], sn*s[0] + c*s[1]}
}

// segments draws n segments with unit-norm start states, hist real states
// before the start and steps recorded steps after it; acts gives the
// actions (zero when nil).
func (l linSys) segments(n, hist, steps int, acts func(rng *rand.Rand) float64, rng *rand.Rand) []Segment {
	segs := make([]Segment, n)
	for i := range segs {
		a := rng.Float64() * 2 * math.Pi
		s0 := []float64{math.Cos(a), math.Sin(a)}
		s := l.rot(s0, -hist) // zero actions before the start
		seg := Segment{Hist: hist}
		for t := 0; t <= hist+steps; t++ {
			seg.States = append(seg.States, []float32{float32(s[0]), float32(s[1])})
			if t == hist+steps {
				break
			}
			u := 0.0
			if acts != nil && t >= hist {
				u = acts(rng)
			}
			seg.Acts = append(seg.Acts, []float32{float32(u)})
			s = l.rot(s, 1)
			s[0] += l.b[0] * u
			s[1] += l.b[1] * u
		}
		segs[i] = seg
	}
	return segs
}

// linAnyStep is the k-step model ŝ_{τ+k} = (cA)^k x + Σ_j (cA)^{k-1-j} B a_{τ+j}.
type linAnyStep struct {
	l linSys
	c float64
}

func (p linAnyStep) predictK(h *window.Window, rows []int, k int, out []float32) error {
	for q, r := range rows {
		x := h.State(r, h.Len[r]-k)
		s := []float64{float64(x[0]), float64(x[1])}
		for j := 0; j < k; j++ {
			u := float64(h.Action(r, h.Len[r]-k+j)[0])
			s = p.l.rot(s, 1)
			s[0] = p.c*s[0] + p.l.b[0]*u
			s[1] = p.c*s[1] + p.l.b[1]*u
		}
		for i := range s {
			out[q*2+i] = float32(s[i]) // overflows to ±Inf in float32
		}
	}
	return nil
}

// TestOpenLoopOneStepAnalytic: iterating the one-step model with zero
// actions gives MSE_t = (c^t - 1)^2 |s0|^2 / 2, clamped to the float32
// maximum once it (or the state) overflows.
func TestOpenLoopOneStepAnalytic(t *testing.T) {
	l := linSys{th: 0.3, b: []float64{0.5, -0.2}}
	rng := rand.New(rand.NewSource(1))
	for _, c := range []float64{1.05, 3} {
		segs := l.segments(20, 2, 100, nil, rng)
		rule := &ADMRoll{P: linAnyStep{l, c}, M: 3, FixedK: 1, Label: "k=1"}
		cur, err := OpenLoop(rule, segs, 100, rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range cur.H {
			g := math.Pow(c, float64(h)) - 1
			want := math.Min(g*g/2, MaxFloat32)
			if math.Pow(c, float64(h)) > MaxFloat32 {
				want = MaxFloat32
			}
			if rel := math.Abs(cur.MeanMSE[i]-want) / want; rel > 1e-4 {
				t.Fatalf("c=%v H=%d: mean MSE %.6g, analytic %.6g", c, h, cur.MeanMSE[i], want)
			}
			if math.Abs(cur.MeanL2[i]-math.Min(math.Abs(g), MaxFloat32))/math.Min(math.Abs(g), MaxFloat32) > 1e-4 &&
				math.Pow(c, float64(h)) <= MaxFloat32 {
				t.Fatalf("c=%v H=%d: mean L2 %.6g, analytic %.6g", c, h, cur.MeanL2[i], math.Abs(g))
			}
		}
		// 3^80 |x| < MaxFloat32 for every component |x| <= 1, and 3^82 |x| >
		// MaxFloat32 for the largest component (>= 1/sqrt 2) of a unit state.
		if c == 3 && (cur.Overflow[79] != 0 || cur.Overflow[81] != 20) {
			t.Errorf("overflowed segments at H=80, 82: %d, %d; want 0, 20", cur.Overflow[79], cur.Overflow[81])
		}
	}
}

// TestOpenLoopWithActionsAnalytic: with recorded actions the k=1 error is
// Σ_j ((cA)^{t-1-j} - A^{t-1-j}) B a_j + (c^t - 1) A^t s0, evaluated here in
// closed form per segment; a wrong action alignment changes it.
func TestOpenLoopWithActionsAnalytic(t *testing.T) {
	l := linSys{th: 0.7, b: []float64{0.5, -0.2}}
	rng := rand.New(rand.NewSource(2))
	const c, horizon = 1.02, 30
	segs := l.segments(10, 0, horizon, func(r *rand.Rand) float64 { return 2*r.Float64() - 1 }, rng)
	cur, err := OpenLoop(&ADMRoll{P: linAnyStep{l, c}, M: 1, FixedK: 1, Label: "k=1"}, segs, horizon, rng)
	if err != nil {
		t.Fatal(err)
	}
	for ti := 1; ti <= horizon; ti++ {
		var sum float64
		for _, s := range segs {
			s0 := []float64{float64(s.States[0][0]), float64(s.States[0][1])}
			e := l.rot(s0, ti)
			g := math.Pow(c, float64(ti)) - 1
			e[0], e[1] = g*e[0], g*e[1]
			for j := 0; j < ti; j++ {
				u := float64(s.Acts[j][0])
				bu := l.rot([]float64{l.b[0] * u, l.b[1] * u}, ti-1-j)
				f := math.Pow(c, float64(ti-1-j)) - 1
				e[0] += f * bu[0]
				e[1] += f * bu[1]
			}
			sum += (e[0]*e[0] + e[1]*e[1]) / 2
		}
		want := sum / float64(len(segs))
		if got := cur.MeanMSE[ti-1]; math.Abs(got-want) > 1e-4*want+1e-10 {
			t.Fatalf("H=%d: mean MSE %.6g, closed form %.6g", ti, got, want)
		}
	}
}

// TestOpenLoopADMRollExpectation: under ADM-Roll every state has exponent
// g_{t+1} = g_{t+1-k} + k with k uniform on 1..(states in the window); real
// history states have g = 0. The expected MSE E[(c^g - 1)^2]/2 is computed
// by exact enumeration of the window distribution and compared with the
// evaluator's Monte-Carlo mean over many segments.
func TestOpenLoopADMRollExpectation(t *testing.T) {
	l := linSys{th: 0.4, b: []float64{0.5, -0.2}}
	const c, m, hist, horizon, n = 1.1, 3, 1, 12, 6000
	rng := rand.New(rand.NewSource(3))
	segs := l.segments(n, hist, horizon, nil, rng)
	cur, err := OpenLoop(&ADMRoll{P: linAnyStep{l, c}, M: m, Label: "ADM-Roll"}, segs, horizon, rng)
	if err != nil {
		t.Fatal(err)
	}
	// Exact distribution over windows (tuples of exponents, oldest first).
	type win struct {
		g [m]int
		l int
	}
	dist := map[win]float64{{l: hist + 1}: 1}
	for step := 1; step <= horizon; step++ {
		next := map[win]float64{}
		var ex, ex2 float64
		for w, p := range dist {
			for k := 1; k <= w.l; k++ {
				g := w.g[w.l-k] + k
				nw := w
				if nw.l == m {
					copy(nw.g[:], nw.g[1:])
					nw.l--
				}
				nw.g[nw.l] = g
				nw.l++
				pk := p / float64(w.l)
				next[nw] += pk
				x := math.Pow(math.Pow(c, float64(g))-1, 2) / 2
				ex += pk * x
				ex2 += pk * x * x
			}
		}
		dist = next
		se := math.Sqrt((ex2 - ex*ex) / n)
		got := cur.MeanMSE[step-1]
		t.Logf("H=%d: Monte-Carlo %.5f, exact %.5f ± %.5f", step, got, ex, se)
		if math.Abs(got-ex) > 4*se+1e-9 {
			t.Errorf("H=%d: ADM-Roll mean MSE %.5f, exact expectation %.5f (standard error %.5f)", step, got, ex, se)
		}
	}
}

// linearEnsemble builds an ensemble whose members are single identity
// layers predicting ŝ' - s = (c_i·A - I) s + B a (identity normaliser).
func linearEnsemble(l linSys, cs []float64, elites []int) *models.Ensemble {
	e := models.NewEnsemble(2, 1, len(cs), nil, rand.New(rand.NewSource(0)))
	e.Elites = elites
	cth, sth := math.Cos(l.th), math.Sin(l.th)
	for i, c := range cs {
		lin := &e.Members[i].Layers[0] // [3 -> 6], y = x·W + b
		clear(lin.W)
		clear(lin.B)
		// x = [s0, s1, a]; outputs 0,1 are the mean delta.
		lin.W[0*6+0], lin.W[1*6+0], lin.W[2*6+0] = float32(c*cth-1), float32(-c*sth), float32(l.b[0])
		lin.W[0*6+1], lin.W[1*6+1], lin.W[2*6+1] = float32(c*sth), float32(c*cth-1), float32(l.b[1])
		e.Members[i].Activation = "identity"
	}
	return e
}

// TestOpenLoopEnsembleAnalytic: with an elite drawn uniformly per step and
// zero actions, E[MSE_t] = ((mean c²)^t - 2 (mean c)^t + 1)/2 over the elites'
// gains (the non-elite member must never be used).
func TestOpenLoopEnsembleAnalytic(t *testing.T) {
	l := linSys{th: 0.5, b: []float64{0.3, 0.1}}
	cs := []float64{0.95, 1.1, 50, 1.0} // member 2 is not an elite
	elites := []int{0, 1, 3}
	e := linearEnsemble(l, cs, elites)
	const horizon, n = 15, 6000
	rng := rand.New(rand.NewSource(4))
	segs := l.segments(n, 0, horizon, nil, rng)
	cur, err := OpenLoop(&EnsembleRoll{Model: e, Label: "ensemble"}, segs, horizon, rng)
	if err != nil {
		t.Fatal(err)
	}
	var m1, m2, m3, m4 float64
	for _, i := range elites {
		c := cs[i]
		m1 += c / 3
		m2 += c * c / 3
		m3 += c * c * c / 3
		m4 += c * c * c * c / 3
	}
	for ti := 1; ti <= horizon; ti++ {
		p := float64(ti)
		ex := (math.Pow(m2, p) - 2*math.Pow(m1, p) + 1) / 2
		// E[X^2] for X = (G-1)^2/2, G = product of t gains.
		ex2 := (math.Pow(m4, p) - 4*math.Pow(m3, p) + 6*math.Pow(m2, p) - 4*math.Pow(m1, p) + 1) / 4
		se := math.Sqrt((ex2 - ex*ex) / n)
		if got := cur.MeanMSE[ti-1]; math.Abs(got-ex) > 4*se+1e-6 {
			t.Errorf("H=%d: ensemble mean MSE %.6f, analytic %.6f ± %.6f", ti, got, ex, se)
		}
	}
}
