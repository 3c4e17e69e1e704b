package onnx_test

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

const tol = 1e-5

func TestActorMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	const obsDim, actDim, batch = 7, 3, 41
	a := randActor(1, obsDim, actDim, []int{32, 24})
	model, err := onnx.ExportActor(a, map[string]string{"task": "hopper"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	obs := randVec(rng, batch*obsDim, 1.5)
	noise := randVec(rng, batch*actDim, 1)
	for i := 0; i < actDim; i++ { // a row with zero noise: action must equal mean_action
		noise[i] = 0
	}
	outs := runORT(t, model, []input{
		{name: schema.Obs, shape: []int64{batch, obsDim}, f32: obs},
		{name: schema.Noise, shape: []int64{batch, actDim}, f32: noise},
	}, []string{schema.Action, schema.MeanAction})
	var wantA, wantM []float64
	for b := 0; b < batch; b++ {
		act, mean := testfix.Actor(a, testfix.F64(obs[b*obsDim:(b+1)*obsDim]), testfix.F64(noise[b*actDim:(b+1)*actDim]))
		wantA = append(wantA, act...)
		wantM = append(wantM, mean...)
	}
	expect(t, outs, schema.Action, []int64{batch, actDim}, wantA, tol)
	expect(t, outs, schema.MeanAction, []int64{batch, actDim}, wantM, tol)
	for i := 0; i < actDim; i++ {
		if got, m := outs[schema.Action].data[i], outs[schema.MeanAction].data[i]; got != m {
			t.Errorf("zero noise: action[%d] = %v, mean_action %v", i, got, m)
		}
	}
}

func TestCriticMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	const obsDim, actDim, batch = 11, 3, 29
	rng := rand.New(rand.NewSource(3))
	c := models.NewCritic(obsDim, actDim, []int{40, 40}, rng)
	model, err := onnx.ExportCritic(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := randVec(rng, batch*obsDim, 2)
	act := randVec(rng, batch*actDim, 1)
	outs := runORT(t, model, []input{
		{name: schema.Obs, shape: []int64{batch, obsDim}, f32: obs},
		{name: schema.Act, shape: []int64{batch, actDim}, f32: act},
	}, []string{schema.Q})
	var want []float64
	for b := 0; b < batch; b++ {
		want = append(want, testfix.Critic(c, testfix.F64(obs[b*obsDim:(b+1)*obsDim]), testfix.F64(act[b*actDim:(b+1)*actDim])))
	}
	expect(t, outs, schema.Q, []int64{batch, 1}, want, tol)
}

func TestEnsembleMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	const obsDim, actDim, members, batch = 6, 2, 3, 33
	e := randEnsemble(4, obsDim, actDim, members, []int{20, 16, 20})
	model, err := onnx.ExportEnsemble(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	obs := randVec(rng, batch*obsDim, 2)
	act := randVec(rng, batch*actDim, 1)
	outs := runORT(t, model, []input{
		{name: schema.Obs, shape: []int64{batch, obsDim}, f32: obs},
		{name: schema.Act, shape: []int64{batch, actDim}, f32: act},
	}, []string{schema.Mean, schema.LogVar})
	d := obsDim + 1
	wantM := make([]float64, members*batch*d)
	wantL := make([]float64, members*batch*d)
	for b := 0; b < batch; b++ {
		for i := 0; i < members; i++ {
			mu, lv := testfix.EnsembleMember(e, i, testfix.F64(obs[b*obsDim:(b+1)*obsDim]), testfix.F64(act[b*actDim:(b+1)*actDim]))
			copy(wantM[(i*batch+b)*d:], mu)
			copy(wantL[(i*batch+b)*d:], lv)
		}
	}
	expect(t, outs, schema.Mean, []int64{members, batch, int64(d)}, wantM, tol)
	expect(t, outs, schema.LogVar, []int64{members, batch, int64(d)}, wantL, tol)
	checkClampActive(t, outs[schema.LogVar].data, wantL)
}

// checkClampActive makes sure the test data drive the soft clamp near both
// bounds, so that a wrong clamp cannot pass unnoticed.
func checkClampActive(t *testing.T, got []float32, want []float64) {
	t.Helper()
	lo, hi := 0, 0
	for _, v := range want {
		if v < -1.8 { // within 1 of Min: the raw value was near or below it
			lo++
		}
		if v > -0.2 { // within 1 of Max
			hi++
		}
	}
	if lo == 0 || hi == 0 {
		t.Fatalf("test data do not reach the log-variance bounds (%d low, %d high)", lo, hi)
	}
}

// admCase is one random ADM test problem.
type admCase struct {
	m                *models.ADM
	batch            int
	obs, actions     []float32
	lengths          []int32
	clamped          []int
	wantNext, wantR  []float64
	wantLV, wantAllM []float64
}

// newADMCase draws inputs (lengths 1..m, plus a 0 and an m+3 that the graph
// clamps) and computes the reference outputs.
func newADMCase(m *models.ADM, batch int, seed int64) *admCase {
	c := m.Cfg
	rng := rand.New(rand.NewSource(seed))
	tc := &admCase{m: m, batch: batch}
	tc.obs = make([]float32, batch*c.ObsDim)
	for i := range tc.obs {
		j := i % c.ObsDim
		tc.obs[i] = m.Norm.Mean[j] + m.Norm.Std[j]*float32(rng.NormFloat64())
	}
	tc.actions = randVec(rng, c.M*batch*c.ActDim, 1)
	for b := 0; b < batch; b++ {
		l := int32(1 + rng.Intn(c.M))
		switch b {
		case 0:
			l = 0
		case 1:
			l = int32(c.M + 3)
		}
		tc.lengths = append(tc.lengths, l)
		tc.clamped = append(tc.clamped, min(max(int(l), 1), c.M))
	}
	tc.setWants()
	return tc
}

// setWants computes the reference outputs for the rows' clamped lengths:
// the prediction after each row's k steps, and the mean after every step.
func (tc *admCase) setWants() {
	c, batch := tc.m.Cfg, tc.batch
	d := c.ObsDim + 1
	tc.wantNext, tc.wantR, tc.wantLV = nil, nil, nil
	tc.wantAllM = make([]float64, c.M*batch*d)
	for b, k := range tc.clamped {
		obs := testfix.F64(tc.obs[b*c.ObsDim : (b+1)*c.ObsDim])
		acts := make([][]float64, c.M)
		for j := range acts {
			off := (j*batch + b) * c.ActDim
			acts[j] = testfix.F64(tc.actions[off : off+c.ActDim])
		}
		means, lvs := testfix.ADM(tc.m, obs, acts)
		for i := 0; i < c.ObsDim; i++ {
			tc.wantNext = append(tc.wantNext, obs[i]+means[k-1][i])
		}
		tc.wantR = append(tc.wantR, means[k-1][c.ObsDim])
		tc.wantLV = append(tc.wantLV, lvs[k-1]...)
		for j := 0; j < c.M; j++ {
			copy(tc.wantAllM[(j*batch+b)*d:], means[j])
		}
	}
}

func (tc *admCase) check(t *testing.T, opts onnx.ADMOptions) {
	c := tc.m.Cfg
	model, err := onnx.ExportADM(tc.m, opts, map[string]string{"task": "test"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{schema.NextObsMean, schema.RewardMean, schema.LogVar}
	if opts.AllSteps {
		names = append(names, schema.AllMean)
	}
	B := int64(tc.batch)
	outs := runORT(t, model, []input{
		{name: schema.Obs, shape: []int64{B, int64(c.ObsDim)}, f32: tc.obs},
		{name: schema.Actions, shape: []int64{int64(c.M), B, int64(c.ActDim)}, f32: tc.actions},
		{name: schema.Lengths, shape: []int64{B}, i32: tc.lengths},
	}, names)
	expect(t, outs, schema.NextObsMean, []int64{B, int64(c.ObsDim)}, tc.wantNext, tol)
	expect(t, outs, schema.RewardMean, []int64{B, 1}, tc.wantR, tol)
	expect(t, outs, schema.LogVar, []int64{B, int64(c.ObsDim + 1)}, tc.wantLV, tol)
	checkClampActive(t, outs[schema.LogVar].data, tc.wantLV)
	if opts.AllSteps {
		expect(t, outs, schema.AllMean, []int64{int64(c.M), B, int64(c.ObsDim + 1)}, tc.wantAllM, tol)
	}
}

func TestADMMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 24, Layers: 3, ResBlocks: 2, M: 4}
	tc := newADMCase(randADM(t, 6, cfg), 37, 7)
	seen := map[int]bool{}
	for _, k := range tc.clamped {
		seen[k] = true
	}
	if len(seen) != cfg.M {
		t.Fatalf("test rows cover lengths %v, want all of 1..%d", seen, cfg.M)
	}
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
		for _, all := range []bool{false, true} {
			opts := onnx.ADMOptions{Form: form, AllSteps: all}
			t.Run(form.String()+map[bool]string{false: "", true: "_all"}[all], func(t *testing.T) { tc.check(t, opts) })
		}
	}
}

// TestADMHopperSize checks the paper's hopper model size (3x200 GRU, 4
// ResBlocks, m = 5) in both forms.
func TestADMHopperSize(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := models.DefaultADMConfig(11, 3, 5)
	tc := newADMCase(randADM(t, 8, cfg), 24, 9)
	tc.check(t, onnx.ADMOptions{Form: onnx.ADMGRUOp})
	tc.check(t, onnx.ADMOptions{Form: onnx.ADMUnrolled, AllSteps: true})
}

func TestADMSingleLayerNoBlocks(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := models.ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 0, M: 1}
	tc := newADMCase(randADM(t, 10, cfg), 9, 11)
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
		tc.check(t, onnx.ADMOptions{Form: form, AllSteps: true})
		tc.check(t, onnx.ADMOptions{Form: form})
	}
}

func TestADMStepMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	for _, form := range stepForms {
		t.Run(form.String(), func(t *testing.T) { testADMStepMatchesReference(t, form) })
	}
}

func testADMStepMatchesReference(t *testing.T, form onnx.ADMForm) {
	cfg := models.ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 1, M: 3}
	m, model := stepModel(t, 12, cfg, form)
	const batch = 13
	rng := rand.New(rand.NewSource(13))
	obs := randVec(rng, batch*cfg.ObsDim, 1)
	hidden := make([]float32, cfg.Layers*batch*cfg.Hidden)
	// reference hidden states per row and layer
	refH := make([][][]float64, batch)
	for b := range refH {
		refH[b] = testfix.ADMHidden(m)
	}
	for step := 0; step < cfg.M; step++ {
		act := randVec(rng, batch*cfg.ActDim, 1)
		outs := runStep(t, model, cfg, hidden, batch, obs, act)
		want := newStepWant(cfg, batch)
		for b := 0; b < batch; b++ {
			want.addRow(m, b, refH[b], obs[b*cfg.ObsDim:(b+1)*cfg.ObsDim], act[b*cfg.ActDim:(b+1)*cfg.ActDim])
		}
		want.check(t, outs)
		hidden = outs[schema.HiddenOut].data
	}
}

// Exports are byte-for-byte reproducible (metadata sorted, no map order),
// and ONNX Runtime reads the metadata back.
func TestExportDeterministicWithMetadata(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := models.ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 1, M: 3}
	m := randADM(t, 14, cfg)
	meta := map[string]string{"task": "walker2d", "seed": "7", "z": "last"}
	first, err := onnx.ExportADM(m, onnx.ADMOptions{}, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, err := onnx.ExportADM(m, onnx.ADMOptions{}, meta)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(first) {
			t.Fatal("two exports of the same model differ")
		}
	}
	md, err := ort.GetModelMetadataWithONNXData(first)
	if err != nil {
		t.Fatal(err)
	}
	defer md.Destroy()
	want := map[string]string{
		"task": "walker2d", "seed": "7", "admpo_model": "adm", "adm_form": "unrolled", "all_steps": "false",
		"m": "3", "obs_dim": "3", "act_dim": "2", "admpo_version": onnx.Version,
		"norm_std": onnx.JoinFloats(m.Norm.Std),
	}
	for k, v := range want {
		got, ok, err := md.LookupCustomMetadataMap(k)
		if err != nil || !ok || got != v {
			t.Errorf("metadata %s = %q (found %v, err %v), want %q", k, got, ok, err, v)
		}
	}
	if p, err := md.GetProducerName(); err != nil || p != onnx.ProducerName {
		t.Errorf("producer %q, %v", p, err)
	}
}
