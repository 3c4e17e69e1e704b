package models

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models/ops"
)

// naiveMember is a float64 forward of one member on normalised inputs x
// [rows, in]: mean and soft-clamped logvar, rows x d.
func naiveMember(m *MLP, b *LogVarBounds, x []float32, rows int) (mean, lv [][]float64) {
	cur := make([][]float64, rows)
	for r := range cur {
		cur[r] = make([]float64, m.Layers[0].In)
		for j := range cur[r] {
			cur[r][j] = float64(x[r*m.Layers[0].In+j])
		}
	}
	for li, l := range m.Layers {
		next := make([][]float64, rows)
		for r := range next {
			next[r] = make([]float64, l.Out)
			for o := 0; o < l.Out; o++ {
				s := float64(l.B[o])
				for i := 0; i < l.In; i++ {
					s += cur[r][i] * float64(l.W[i*l.Out+o])
				}
				if li+1 < len(m.Layers) {
					s = s / (1 + math.Exp(-s)) // swish
				}
				next[r][o] = s
			}
		}
		cur = next
	}
	d := len(b.Max)
	sp := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
	for r := range cur {
		mean = append(mean, cur[r][:d])
		row := make([]float64, d)
		for j := 0; j < d; j++ {
			mx, mn := float64(b.Max[j]), float64(b.Min[j])
			a := mx - sp(mx-cur[r][d+j])
			row[j] = mn + sp(a-mn)
		}
		lv = append(lv, row)
	}
	return mean, lv
}

func TestEnsembleGraphLossAndGradients(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	const obs, act, batch = 3, 2, 5
	e := NewEnsemble(obs, act, 2, []int{6, 6}, rng)
	for i := range e.Bounds {
		for j := range e.Bounds[i].Max {
			e.Bounds[i].Max[j] = float32(0.5 + 0.1*rng.NormFloat64())
			e.Bounds[i].Min[j] = float32(-2 + 0.1*rng.NormFloat64()) // close enough to matter
		}
	}
	decay := []float64{0.01, 0.02, 0.03}
	eg, err := NewEnsembleTrainGraph(e, batch, decay)
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close()
	d := obs + 1
	for i := range e.Members {
		copy(eg.X[i], randSlice(rng, batch*(obs+act), 1))
		copy(eg.Target[i], randSlice(rng, batch*d, 1))
		for r := 0; r < batch; r++ {
			eg.Weight[i][r] = float32(rng.Intn(2))
		}
		eg.Weight[i][0] = 1
	}
	if err := eg.Run(); err != nil {
		t.Fatal(err)
	}
	loss, _, err := eg.LossValue()
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for i := range e.Members {
		mean, lv := naiveMember(&e.Members[i], &e.Bounds[i], eg.X[i], batch)
		var s, n float64
		for r := 0; r < batch; r++ {
			w := float64(eg.Weight[i][r])
			for j := 0; j < d; j++ {
				er := mean[r][j] - float64(eg.Target[i][r*d+j])
				s += w * (er*er*math.Exp(-lv[r][j]) + lv[r][j])
			}
			n += w * float64(d)
		}
		want += s / n
		for j := 0; j < d; j++ {
			want += 0.01*float64(e.Bounds[i].Max[j]) - 0.01*float64(e.Bounds[i].Min[j])
		}
		for l, wd := range decay {
			for _, v := range e.Members[i].Layers[l].W {
				want += 0.5 * wd * float64(v) * float64(v)
			}
		}
	}
	if math.Abs(float64(loss)-want) > 1e-5*math.Abs(want) {
		t.Fatalf("loss %v, float64 reference %v", loss, want)
	}
	// Gradients: finite differences through the same graph's cost.
	var ps []fdParam
	for _, p := range eg.Params {
		d, _, err := ops.ValueF32(p.Value())
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, fdParam{p.Name(), p, d})
	}
	checkGradsRun(t, eg.Run, eg.Loss, ps, 12, 1e-2, 5e-3, 9)
}

func TestEnsemblePlainForwardMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	const obs, act, rows = 5, 3, 9
	e := NewEnsemble(obs, act, 3, []int{200, 200, 200, 200}, rng)
	for j := range e.Norm.Mean {
		e.Norm.Mean[j] = float32(rng.NormFloat64())
		e.Norm.Std[j] = float32(0.5 + rng.Float64())
	}
	o := randSlice(rng, rows*obs, 1)
	a := randSlice(rng, rows*act, 1)
	x := make([]float32, rows*(obs+act))
	for r := 0; r < rows; r++ {
		for j := 0; j < obs+act; j++ {
			v := float64(0)
			if j < obs {
				v = float64(o[r*obs+j])
			} else {
				v = float64(a[r*act+j-obs])
			}
			x[r*(obs+act)+j] = float32((v - float64(e.Norm.Mean[j])) / float64(e.Norm.Std[j]))
		}
	}
	d := obs + 1
	mean := make([]float32, rows*d)
	lv := make([]float32, rows*d)
	var s Scratch
	for i := range e.Members {
		if err := e.PredictMember(i, o, a, mean, lv, &s); err != nil {
			t.Fatal(err)
		}
		wm, wl := naiveMember(&e.Members[i], &e.Bounds[i], x, rows)
		for r := 0; r < rows; r++ {
			for j := 0; j < d; j++ {
				if math.Abs(float64(mean[r*d+j])-wm[r][j]) > 2e-5*math.Max(1, math.Abs(wm[r][j])) ||
					math.Abs(float64(lv[r*d+j])-wl[r][j]) > 2e-5*math.Max(1, math.Abs(wl[r][j])) {
					t.Fatalf("member %d row %d dim %d: got %v/%v, naive %v/%v", i, r, j, mean[r*d+j], lv[r*d+j], wm[r][j], wl[r][j])
				}
			}
		}
	}
	if err := e.PredictMember(3, o, a, mean, lv, nil); err == nil {
		t.Fatal("member 3 of 3 accepted")
	}
}
