package models

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/internal/cpukern/cpukerntest"
	"github.com/admpo/admpo/internal/pyref"
)

// namedTensor is a tensor exchanged with the PyTorch reference script.
type namedTensor struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Off   int    `json:"off"`
	data  []float32
}

func writeExchange(t *testing.T, dir, stem string, config map[string]int, ts []namedTensor) {
	t.Helper()
	var all []float32
	for i := range ts {
		ts[i].Off = len(all)
		all = append(all, ts[i].data...)
	}
	man, err := json.Marshal(map[string]any{"config": config, "tensors": ts})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stem+".json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4*len(all))
	for i, v := range all {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(filepath.Join(dir, stem+".bin"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readExchange(t *testing.T, dir, stem string) (map[string][]float32, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, stem+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var man map[string]any
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(dir, stem+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, e := range man["tensors"].([]any) {
		m := e.(map[string]any)
		n := 1
		for _, s := range m["shape"].([]any) {
			n *= int(s.(float64))
		}
		off := int(m["off"].(float64))
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(bin[4*(off+i):]))
		}
		out[m["name"].(string)] = v
	}
	return out, man
}

// relErr is max|got-want| / max(max|want|, floor).
func relErr(got, want []float32, floor float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-float64(want[i])))
		den = math.Max(den, math.Abs(float64(want[i])))
	}
	return num / math.Max(den, floor)
}

// admWeightTensors lists m's weights under the reference script's names, in
// the order of ADMGraph.Params.
func admWeightTensors(m *ADM) []namedTensor {
	c := m.Cfg
	h3 := 3 * c.Hidden
	var ts []namedTensor
	for l, g := range m.GRU {
		ts = append(ts,
			namedTensor{Name: fmt.Sprintf("gru%d.Wi", l), Shape: []int{g.In, h3}, data: g.Wi},
			namedTensor{Name: fmt.Sprintf("gru%d.Bi", l), Shape: []int{h3}, data: g.Bi},
			namedTensor{Name: fmt.Sprintf("gru%d.Wh", l), Shape: []int{c.Hidden, h3}, data: g.Wh},
			namedTensor{Name: fmt.Sprintf("gru%d.Bh", l), Shape: []int{h3}, data: g.Bh})
	}
	for b, blk := range m.Blocks {
		ts = append(ts,
			namedTensor{Name: fmt.Sprintf("block%d.W", b), Shape: []int{c.Hidden, c.Hidden}, data: blk.Lin.W},
			namedTensor{Name: fmt.Sprintf("block%d.B", b), Shape: []int{c.Hidden}, data: blk.Lin.B},
			namedTensor{Name: fmt.Sprintf("block%d.gamma", b), Shape: []int{c.Hidden}, data: blk.Norm.Gamma},
			namedTensor{Name: fmt.Sprintf("block%d.beta", b), Shape: []int{c.Hidden}, data: blk.Norm.Beta})
	}
	d := c.ObsDim + 1
	ts = append(ts,
		namedTensor{Name: "out.W", Shape: []int{c.Hidden, 2 * d}, data: m.Out.W},
		namedTensor{Name: "out.B", Shape: []int{2 * d}, data: m.Out.B},
		namedTensor{Name: "bounds.max", Shape: []int{d}, data: m.Bounds.Max},
		namedTensor{Name: "bounds.min", Shape: []int{d}, data: m.Bounds.Min})
	return ts
}

// randomADM returns an ADM with perturbed LayerNorms and a non-trivial
// normaliser, so every parameter matters.
func randomADM(t *testing.T, cfg ADMConfig, seed int64) *ADM {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	m, err := NewADM(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Blocks {
		for j := range m.Blocks[i].Norm.Gamma {
			m.Blocks[i].Norm.Gamma[j] = float32(1 + 0.2*rng.NormFloat64())
			m.Blocks[i].Norm.Beta[j] = float32(0.2 * rng.NormFloat64())
		}
	}
	for j := range m.Norm.Mean {
		m.Norm.Mean[j] = float32(rng.NormFloat64())
		m.Norm.Std[j] = float32(0.5 + rng.Float64())
	}
	for j := range m.Bounds.Max {
		m.Bounds.Max[j] = float32(0.5 + 0.1*rng.NormFloat64())
		m.Bounds.Min[j] = float32(-10 + 0.1*rng.NormFloat64())
	}
	return m
}

// admBatch is one batch of raw start states and actions with targets.
type admBatch struct {
	start  []float32 // [B, obs]
	acts   []float32 // [m, B, act]
	target []float32 // [m, B, obs+1]
	weight []float32 // [m, B]
}

func randomADMBatch(cfg ADMConfig, batch int, seed int64) admBatch {
	rng := rand.New(rand.NewSource(seed))
	d := cfg.ObsDim + 1
	b := admBatch{
		start:  randSlice(rng, batch*cfg.ObsDim, 1),
		acts:   randSlice(rng, cfg.M*batch*cfg.ActDim, 1),
		target: randSlice(rng, cfg.M*batch*d, 0.5),
		weight: make([]float32, cfg.M*batch),
	}
	for r := 0; r < batch; r++ {
		n := 1 + rng.Intn(cfg.M) // valid length of sequence r
		for k := 0; k < n; k++ {
			b.weight[k*batch+r] = 1
		}
	}
	return b
}

// fillADMInputs writes the normalised time-major inputs of b into a.
func fillADMInputs(a *ADMGraph, b admBatch) {
	c := a.Model.Cfg
	in := c.ObsDim + c.ActDim
	for k := 0; k < c.M; k++ {
		a.Model.Norm.normalizeInto(a.X[k*a.Batch*in:(k+1)*a.Batch*in], b.start,
			b.acts[k*a.Batch*c.ActDim:(k+1)*a.Batch*c.ActDim], c.ObsDim, c.ActDim, a.Batch)
	}
	if a.Target != nil {
		copy(a.Target, b.target)
		copy(a.Weight, b.weight)
	}
}

// runADMGraph runs a on batch b and returns its mean and log-variance
// outputs, [M·batch, ObsDim+1] each.
func runADMGraph(t *testing.T, a *ADMGraph, b admBatch) (mean, logvar []float32) {
	t.Helper()
	fillADMInputs(a, b)
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	mean, logvar, err := a.Outputs()
	if err != nil {
		t.Fatal(err)
	}
	return mean, logvar
}

// checkPlainForward runs m's plain-Go forward (PredictAll, incremental GRU
// steps) on batch b and compares every step's mean and log-variance with
// wantMean and wantLogvar ([M·batch, ObsDim+1], step-major) computed by ref.
func checkPlainForward(t *testing.T, m *ADM, batch int, b admBatch, wantMean, wantLogvar []float32, ref string) {
	t.Helper()
	cfg := m.Cfg
	d := cfg.ObsDim + 1
	acts := make([][]float32, cfg.M)
	mean := make([][]float32, cfg.M)
	logvar := make([][]float32, cfg.M)
	for k := range acts {
		acts[k] = b.acts[k*batch*cfg.ActDim : (k+1)*batch*cfg.ActDim]
		mean[k], logvar[k] = make([]float32, batch*d), make([]float32, batch*d)
	}
	if _, err := m.PredictAll(nil, batch, b.start, acts, mean, logvar); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < cfg.M; k++ {
		if e := relErr(mean[k], wantMean[k*batch*d:(k+1)*batch*d], 1e-3); e > 1e-5 {
			t.Errorf("plain forward k=%d mean: relative error %.2e vs %s", k+1, e, ref)
		}
		if e := relErr(logvar[k], wantLogvar[k*batch*d:(k+1)*batch*d], 1e-3); e > 1e-5 {
			t.Errorf("plain forward k=%d logvar: relative error %.2e vs %s", k+1, e, ref)
		}
	}
}

func TestADMMatchesPyTorch(t *testing.T) {
	pyref.Need(t, "torch")
	cfg := ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 24, Layers: 3, ResBlocks: 4, M: 4}
	const batch = 6
	m := randomADM(t, cfg, 11)
	b := randomADMBatch(cfg, batch, 12)
	ts, ref, man := admTorchRef(t, m, b, batch, 0)
	cpukerntest.ForEachPath(t, func(t *testing.T) { admVsPyTorch(t, m, b, ts, ref, man) })
}

// admTorchRef runs testdata/adm_torch.py on m's weights and normaliser and
// the batch b of batch starts: the all-k step, or with k > 0 the authors'
// one-k step of k. It returns the tensors it handed over (weights first,
// in m's order) and PyTorch's outputs and manifest.
func admTorchRef(t *testing.T, m *ADM, b admBatch, batch, k int) ([]namedTensor, map[string][]float32, map[string]any) {
	t.Helper()
	cfg := m.Cfg
	d := cfg.ObsDim + 1
	dir := t.TempDir()
	ts := admWeightTensors(m)
	ts = append(ts,
		namedTensor{Name: "norm.mean", Shape: []int{cfg.ObsDim + cfg.ActDim}, data: m.Norm.Mean},
		namedTensor{Name: "norm.std", Shape: []int{cfg.ObsDim + cfg.ActDim}, data: m.Norm.Std},
		namedTensor{Name: "start", Shape: []int{batch, cfg.ObsDim}, data: b.start},
		namedTensor{Name: "acts", Shape: []int{cfg.M, batch, cfg.ActDim}, data: b.acts},
		namedTensor{Name: "target", Shape: []int{cfg.M, batch, d}, data: b.target},
		namedTensor{Name: "weight", Shape: []int{cfg.M, batch}, data: b.weight})
	params := map[string]int{"obs": cfg.ObsDim, "act": cfg.ActDim, "hidden": cfg.Hidden,
		"layers": cfg.Layers, "blocks": cfg.ResBlocks, "m": cfg.M}
	if k > 0 {
		params["k"] = k
	}
	writeExchange(t, dir, "in", params, ts)
	out, err := exec.Command(pyref.Python, "testdata/adm_torch.py", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("reference script: %v\n%s", err, out)
	}
	ref, man := readExchange(t, dir, "out")
	return ts, ref, man
}

// admVsPyTorch compares one ADM train-graph run (outputs, losses, weight
// gradients) and the plain forward with PyTorch's float64 results.
func admVsPyTorch(t *testing.T, m *ADM, b admBatch, ts []namedTensor, ref map[string][]float32, man map[string]any) {
	const batch = 6
	a, err := NewADMTrainGraph(m, batch, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mean, logvar := runADMGraph(t, a, b)
	if e := relErr(mean, ref["mean"], 1e-3); e > 1e-5 {
		t.Errorf("mean: relative error %.2e vs PyTorch", e)
	}
	if e := relErr(logvar, ref["logvar"], 1e-3); e > 1e-5 {
		t.Errorf("logvar: relative error %.2e vs PyTorch", e)
	}
	loss, nll, err := a.LossValue()
	if err != nil {
		t.Fatal(err)
	}
	wantLoss, wantNLL := man["loss"].(float64), man["nll"].(float64)
	if math.Abs(float64(loss)-wantLoss) > 1e-5*math.Abs(wantLoss) || math.Abs(float64(nll)-wantNLL) > 1e-5*math.Abs(wantNLL) {
		t.Errorf("loss %v nll %v, PyTorch %v %v", loss, nll, wantLoss, wantNLL)
	}
	worst := 0.0
	for i, g := range gradsOf(t, a) {
		name := ts[i].Name
		e := relErr(g, ref[name], 1e-6)
		worst = math.Max(worst, e)
		if e > 1e-4 {
			t.Errorf("gradient of %s (%s): relative error %.2e vs PyTorch", name, a.Params[i].Name(), e)
		}
	}
	t.Logf("outputs match PyTorch (float64) to %.1e/%.1e; worst gradient relative error %.1e",
		relErr(mean, ref["mean"], 1e-3), relErr(logvar, ref["logvar"], 1e-3), worst)

	// The plain-Go forward (incremental GRU steps) against PyTorch too.
	checkPlainForward(t, m, batch, b, ref["mean"], ref["logvar"], "PyTorch")
}

func TestADMGraphMatchesPlainForward(t *testing.T) {
	cfg := DefaultADMConfig(11, 3, 5)
	const batch = 7
	m := randomADM(t, cfg, 21)
	b := randomADMBatch(cfg, batch, 22)
	a, err := NewADMEvalGraph(m, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	gm, glv := runADMGraph(t, a, b)
	checkPlainForward(t, m, batch, b, gm, glv, "the graph")
}

func TestDropoutMask(t *testing.T) {
	r := newDropoutRNG(3)
	mask := make([]float32, 100003)
	r.fill(mask, 0.1)
	zeros, sum := 0, 0.0
	for _, v := range mask {
		if v == 0 {
			zeros++
		} else if math.Abs(float64(v)-1/0.9) > 1e-6 {
			t.Fatalf("kept entry %v, want %v", v, 1/0.9)
		}
		sum += float64(v)
	}
	frac := float64(zeros) / float64(len(mask))
	// 3 standard deviations of a binomial proportion.
	if math.Abs(frac-0.1) > 3*math.Sqrt(0.09/float64(len(mask))) {
		t.Fatalf("dropped fraction %.4f, want 0.1", frac)
	}
	again := make([]float32, len(mask))
	newDropoutRNG(3).fill(again, 0.1)
	for i := range mask {
		if mask[i] != again[i] {
			t.Fatal("same seed gave a different mask")
		}
	}
}
