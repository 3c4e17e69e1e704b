package models

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

const gmAdamScript = `
import json, sys, torch
out = []
for d in json.load(sys.stdin):
    ps = [torch.nn.Parameter(torch.tensor(p, dtype=torch.float32)) for p in d["params"]]
    opt = torch.optim.Adam(ps, lr=d["lr"], weight_decay=d["wd"])
    for step in d["grads"]:
        opt.zero_grad()
        for p, g in zip(ps, step):
            p.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
    out.append([p.detach().tolist() for p in ps])
json.dump(out, sys.stdout)
`

// TestAdamVsTorch runs several steps with fixed, varying gradients and
// compares the parameters with torch.optim.Adam on the same numbers.
func TestAdamVsTorch(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	wds := []float64{0, 0.01}
	var inputs []map[string]any
	var allParams [][][]float32
	var allGrads [][][][]float32
	for _, wd := range wds {
		sizes := []int{7, 3, 1}
		params := make([][]float32, len(sizes))
		for i, n := range sizes {
			params[i] = make([]float32, n)
			for j := range params[i] {
				params[i][j] = float32(rng.NormFloat64())
			}
		}
		var grads [][][]float32
		for s := 0; s < 6; s++ {
			step := make([][]float32, len(sizes))
			for i, n := range sizes {
				step[i] = make([]float32, n)
				for j := range step[i] {
					step[i][j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(5)-3)))
				}
			}
			grads = append(grads, step)
		}
		inputs = append(inputs, map[string]any{"params": params, "grads": grads, "lr": 3e-3, "wd": wd})
		allParams = append(allParams, params)
		allGrads = append(allGrads, grads)
	}
	var wants [][][]float64
	pyref.Need(t, "torch")
	pyref.RunJSON(t, gmAdamScript, inputs, &wants)
	for c, wd := range wds {
		params, grads, want := allParams[c], allGrads[c], wants[c]
		a := NewAdamSlices(params, 3e-3)
		a.WeightDecay = wd
		for _, g := range grads {
			if err := a.StepGrads(g); err != nil {
				t.Fatal(err)
			}
		}
		for i := range params {
			for j := range params[i] {
				if d := math.Abs(float64(params[i][j]) - want[i][j]); d > 1e-6 {
					t.Errorf("wd %v param %d[%d] = %v, torch %v (diff %g)", wd, i, j, params[i][j], want[i][j], d)
				}
			}
		}
	}
}

// TestAdamClosedForm checks Adam against closed forms: with a constant
// gradient g the bias-corrected moments are exactly g and g², so each step
// moves every parameter by -lr·g/(|g|+eps).
func TestAdamClosedForm(t *testing.T) {
	p := []float32{1, -2, 0.5, 3}
	g := []float32{0.3, -1e-3, 2, 0}
	p0 := append([]float32(nil), p...)
	const lr, steps = 0.01, 7
	a := NewAdamSlices([][]float32{p}, lr)
	for s := 0; s < steps; s++ {
		if err := a.StepGrads([][]float32{g}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range p {
		gi := float64(g[i])
		want := float64(p0[i]) - steps*lr*gi/(math.Abs(gi)+1e-8)
		if math.Abs(float64(p[i])-want) > 2e-6 {
			t.Errorf("p[%d] = %v, want %v", i, p[i], want)
		}
	}
	if a.T != steps {
		t.Errorf("T = %d, want %d", a.T, steps)
	}
	if err := a.StepGrads([][]float32{{1}}); err == nil {
		t.Error("a gradient of the wrong size was accepted")
	}
}

// TestAdamNodes trains nodes made by NewLinearNodes: cost = sum(W ⊙ C) +
// sum(B), so dW = C and dB = 1 are constant and the closed form above applies.
// It runs once with symbolic gradients and once with BindDualValues (whose
// gradients would accumulate, giving a different result, if Step did not
// zero them) and checks that the struct's slices were updated in place.
func TestAdamNodes(t *testing.T) {
	for _, dual := range []bool{false, true} {
		rng := rand.New(rand.NewSource(6))
		l := NewLinear(3, 2, rng)
		w0 := append([]float32(nil), l.W...)
		b0 := append([]float32(nil), l.B...)
		cs := []float32{0.5, -1, 2, 0.1, -0.3, 4}
		g := G.NewGraph()
		ln := NewLinearNodes(g, "lin", &l)
		c := G.NewMatrix(g, G.Float32, G.WithShape(3, 2), G.WithName("c"),
			G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(cs))))
		cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(ln.W, c)))), G.Must(G.Sum(ln.B))))
		if _, err := G.Grad(cost, ln.Params()...); err != nil {
			t.Fatal(err)
		}
		var m G.VM
		if dual {
			m = G.NewTapeMachine(g, G.BindDualValues(ln.Params()...))
		} else {
			m = G.NewTapeMachine(g)
		}
		a := NewAdam(ln.Params(), 0.01)
		const steps = 4
		for s := 0; s < steps; s++ {
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			if err := a.Step(); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
		for i := range l.W {
			gi := float64(cs[i])
			want := float64(w0[i]) - steps*0.01*gi/(math.Abs(gi)+1e-8)
			if math.Abs(float64(l.W[i])-want) > 2e-6 {
				t.Errorf("dual=%v W[%d] = %v, want %v", dual, i, l.W[i], want)
			}
		}
		for i := range l.B {
			want := float64(b0[i]) - steps*0.01/(1+1e-8)
			if math.Abs(float64(l.B[i])-want) > 2e-6 {
				t.Errorf("dual=%v B[%d] = %v, want %v", dual, i, l.B[i], want)
			}
		}
	}
}
