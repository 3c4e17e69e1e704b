package models

import (
	"math"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
	"github.com/admpo/admpo/models/ops"
)

// oneKBatch returns a batch whose every step has valid and padding rows, so
// each k's loss counts some starts and leaves out others.
func oneKBatch(cfg ADMConfig, batch int, seed int64) admBatch {
	b := randomADMBatch(cfg, batch, seed)
	for t := 0; t < cfg.M; t++ {
		for r := 0; r < batch; r++ {
			b.weight[t*batch+r] = 0
			if (r+t)%3 != 0 {
				b.weight[t*batch+r] = 1
			}
		}
	}
	return b
}

// fillOneK writes the first k steps of b's inputs and step k's targets and
// weights into the one-k graph a.
func fillOneK(a *ADMGraph, b admBatch) {
	c := a.Model.Cfg
	in, d, k := c.ObsDim+c.ActDim, c.ObsDim+1, a.K
	for t := 0; t < k; t++ {
		a.Model.Norm.normalizeInto(a.X[t*a.Batch*in:(t+1)*a.Batch*in], b.start,
			b.acts[t*a.Batch*c.ActDim:(t+1)*a.Batch*c.ActDim], c.ObsDim, c.ActDim, a.Batch)
	}
	copy(a.Target, b.target[(k-1)*a.Batch*d:k*a.Batch*d])
	copy(a.Weight, b.weight[(k-1)*a.Batch:k*a.Batch])
}

// gradsOf returns copies of the gradients on a's Params after a run.
func gradsOf(t *testing.T, a *ADMGraph) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range a.Params {
		gv, err := p.Grad()
		if err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
		g, _, err := ops.ValueF32(gv)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), g...))
	}
	return out
}

// TestADMOneKMatchesPyTorch checks the one-k training graph of every k
// (GRU over k steps, head at step k, loss on the k-step targets) against
// the authors' step in PyTorch float64: outputs, loss and every weight's
// gradient.
func TestADMOneKMatchesPyTorch(t *testing.T) {
	pyref.Need(t, "torch")
	cfg := ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 24, Layers: 3, ResBlocks: 2, M: 4}
	const batch = 6
	m := randomADM(t, cfg, 31)
	b := oneKBatch(cfg, batch, 32)
	d := cfg.ObsDim + 1
	for k := 1; k <= cfg.M; k++ {
		ts, ref, man := admTorchRef(t, m, b, batch, k)
		a, err := NewADMTrainGraphK(m, k, batch, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		fillOneK(a, b)
		if err := a.Run(); err != nil {
			t.Fatal(err)
		}
		mean, logvar, err := a.Outputs()
		if err != nil {
			t.Fatal(err)
		}
		if len(mean) != batch*d || len(ref["mean"]) != batch*d {
			t.Fatalf("k=%d: %d means, PyTorch %d, want %d", k, len(mean), len(ref["mean"]), batch*d)
		}
		if e := relErr(mean, ref["mean"], 1e-3); e > 1e-5 {
			t.Errorf("k=%d mean: relative error %.2e vs PyTorch", k, e)
		}
		if e := relErr(logvar, ref["logvar"], 1e-3); e > 1e-5 {
			t.Errorf("k=%d logvar: relative error %.2e vs PyTorch", k, e)
		}
		loss, nll, err := a.LossValue()
		if err != nil {
			t.Fatal(err)
		}
		wantLoss, wantNLL := man["loss"].(float64), man["nll"].(float64)
		if math.Abs(float64(loss)-wantLoss) > 1e-5*math.Abs(wantLoss) || math.Abs(float64(nll)-wantNLL) > 1e-5*math.Abs(wantNLL) {
			t.Errorf("k=%d: loss %v nll %v, PyTorch %v %v", k, loss, nll, wantLoss, wantNLL)
		}
		worst := 0.0
		for i, g := range gradsOf(t, a) {
			e := relErr(g, ref[ts[i].Name], 1e-6)
			worst = math.Max(worst, e)
			if e > 1e-4 {
				t.Errorf("k=%d gradient of %s: relative error %.2e vs PyTorch", k, ts[i].Name, e)
			}
		}
		t.Logf("k=%d: loss %.6f (PyTorch %.6f), worst gradient relative error %.1e", k, loss, wantLoss, worst)
		a.Close()
	}
}

// TestADMOneKEqualsMaskedAllK checks, without PyTorch, that the one-k graph
// of k computes the loss and gradients of the all-k graph with every step
// but k weighted 0 (dropout off), and that its Params are the all-k
// graph's weights in the same order (one Adam serves both).
func TestADMOneKEqualsMaskedAllK(t *testing.T) {
	cfg := ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 2, M: 3}
	const batch = 5
	m := randomADM(t, cfg, 41)
	b := oneKBatch(cfg, batch, 42)
	all, err := NewADMTrainGraph(m, batch, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	for k := 1; k <= cfg.M; k++ {
		one, err := NewADMTrainGraphK(m, k, batch, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		fillOneK(one, b)
		if err := one.Run(); err != nil {
			t.Fatal(err)
		}
		masked := b
		masked.weight = make([]float32, len(b.weight))
		copy(masked.weight[(k-1)*batch:k*batch], b.weight[(k-1)*batch:k*batch])
		fillADMInputs(all, masked)
		if err := all.Run(); err != nil {
			t.Fatal(err)
		}
		l1, n1, _ := one.LossValue()
		l2, n2, _ := all.LossValue()
		if math.Abs(float64(l1-l2)) > 1e-5*math.Abs(float64(l2)) || math.Abs(float64(n1-n2)) > 1e-5*math.Abs(float64(n2)) {
			t.Errorf("k=%d: one-k loss %v nll %v, masked all-k %v %v", k, l1, n1, l2, n2)
		}
		g1, g2 := gradsOf(t, one), gradsOf(t, all)
		for i := range g1 {
			if one.Params[i].Value().Data().([]float32)[0] != all.Params[i].Value().Data().([]float32)[0] ||
				&one.Params[i].Value().Data().([]float32)[0] != &all.Params[i].Value().Data().([]float32)[0] {
				t.Fatalf("k=%d: parameter %d (%s) is not backed by the all-k graph's slice", k, i, one.Params[i].Name())
			}
			if e := relErr(g1[i], g2[i], 1e-6); e > 1e-4 {
				t.Errorf("k=%d gradient %s: relative error %.2e vs the masked all-k graph", k, one.Params[i].Name(), e)
			}
		}
		one.Close()
	}
	if _, err := NewADMTrainGraphK(m, 0, batch, 0, 1); err == nil {
		t.Error("k = 0 accepted")
	}
	if _, err := NewADMTrainGraphK(m, cfg.M+1, batch, 0, 1); err == nil {
		t.Error("k = M+1 accepted")
	}
}

// TestAdamStepNodesSharesState checks that Adam.StepNodes with another
// graph's nodes of the same weights moves them as Step would.
func TestAdamStepNodesSharesState(t *testing.T) {
	cfg := ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 1, M: 2}
	const batch = 4
	b := oneKBatch(cfg, batch, 52)
	run := func(useK bool) []float32 {
		m := randomADM(t, cfg, 51)
		all, err := NewADMTrainGraph(m, batch, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer all.Close()
		one, err := NewADMTrainGraphK(m, cfg.M, batch, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		opt := NewAdam(all.Params, 1e-2)
		masked := b
		masked.weight = make([]float32, len(b.weight))
		copy(masked.weight[(cfg.M-1)*batch:], b.weight[(cfg.M-1)*batch:])
		for i := 0; i < 3; i++ {
			if useK {
				fillOneK(one, b)
				if err := one.Run(); err != nil {
					t.Fatal(err)
				}
				if err := opt.StepNodes(one.Params); err != nil {
					t.Fatal(err)
				}
			} else {
				fillADMInputs(all, masked)
				if err := all.Run(); err != nil {
					t.Fatal(err)
				}
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
		}
		return append([]float32(nil), m.Out.W...)
	}
	if e := relErr(run(true), run(false), 1e-3); e > 1e-4 {
		t.Errorf("3 one-k Adam steps via StepNodes differ from masked all-k steps: relative error %.2e", e)
	}

}
