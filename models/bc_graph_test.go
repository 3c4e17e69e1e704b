package models

import (
	"math"
	"math/rand"
	"testing"
)

// bcNaiveLoss is an independent float64 BC loss: a plain ReLU MLP, the
// deterministic action Scale·tanh(u) + Bias, and the mean squared error.
func bcNaiveLoss(a *Actor, obs, act []float32, batch int) float64 {
	var loss float64
	od, ad := a.ObsDim, a.ActDim
	for r := 0; r < batch; r++ {
		h := make([]float64, od)
		for j := range h {
			h[j] = float64(obs[r*od+j])
		}
		for li, l := range a.Net.Layers {
			y := make([]float64, l.Out)
			for o := 0; o < l.Out; o++ {
				s := float64(l.B[o])
				for i := 0; i < l.In; i++ {
					s += h[i] * float64(l.W[i*l.Out+o])
				}
				if li+1 < len(a.Net.Layers) && s < 0 {
					s = 0
				}
				y[o] = s
			}
			h = y
		}
		for j := 0; j < ad; j++ {
			d := float64(a.Scale[j])*math.Tanh(h[j]) + float64(a.Bias[j]) - float64(act[r*ad+j])
			loss += d * d
		}
	}
	return loss / float64(batch*ad)
}

// TestBCGraphFiniteDiff checks the BC loss against the naive float64 loss
// and every weight gradient against central finite differences of it.
func TestBCGraphFiniteDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const batch, od = 5, 4
	actor := NewActor(od, []float64{-1, 0, -2}, []float64{1, 2, 0}, []int{7, 6}, rng)
	g, err := NewBCGraph(actor, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := range g.Obs.Data {
		g.Obs.Data[i] = float32(rng.NormFloat64())
	}
	for r := 0; r < batch; r++ {
		g.Act.Data[r*3+0] = float32(2*rng.Float64() - 1)
		g.Act.Data[r*3+1] = float32(2 * rng.Float64())
		g.Act.Data[r*3+2] = float32(-2 * rng.Float64())
	}
	loss, action, err := g.Run()
	if err != nil {
		t.Fatal(err)
	}
	want := bcNaiveLoss(actor, g.Obs.Data, g.Act.Data, batch)
	if math.Abs(float64(loss)-want) > 1e-5*math.Max(1, want) {
		t.Fatalf("loss %v, naive %v", loss, want)
	}
	if len(action) != batch*3 {
		t.Fatalf("%d action values", len(action))
	}
	checked := 0
	for pi, p := range g.Params {
		gv, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		grad := gv.Data().([]float32)
		w := p.Value().Data().([]float32)
		for _, i := range []int{0, len(w) / 3, len(w) / 2, len(w) - 1} {
			old := w[i]
			const h = 1e-2
			w[i] = old + h
			up := bcNaiveLoss(actor, g.Obs.Data, g.Act.Data, batch)
			w[i] = old - h
			down := bcNaiveLoss(actor, g.Obs.Data, g.Act.Data, batch)
			w[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(float64(grad[i])-fd) > 2e-3*math.Max(1, math.Abs(fd)) {
				t.Errorf("param %d (%s) [%d]: grad %v, finite difference %v", pi, p.Name(), i, grad[i], fd)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d gradients checked", checked)
	}
}
