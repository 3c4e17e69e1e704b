package onnx_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// TestADMStepFreshRows checks the step graph with a hidden input shorter
// than the batch: the first n0 rows continue from their (random) hidden
// states, the others start from the zero state. The expected outputs are
// testfix's float64 GRU step and head, with zero hidden states for the
// fresh rows. n0 = batch is the plain step, n0 = 0 a batch of
// fresh rows only; the metadata says fresh_rows=true.
func TestADMStepFreshRows(t *testing.T) {
	ortskip.IfMissing(t)
	for _, form := range stepForms {
		t.Run(form.String(), func(t *testing.T) { testADMStepFreshRows(t, form) })
	}
}

func testADMStepFreshRows(t *testing.T, form onnx.ADMForm) {
	cfg := models.ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 16, Layers: 3, ResBlocks: 1, M: 3}
	m, model := stepModel(t, 14, cfg, form)
	const batch = 11
	for _, n0 := range []int{batch, 7, 1, 0} {
		t.Run(fmt.Sprintf("n0=%d", n0), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(15 + n0)))
			obs := randVec(rng, batch*cfg.ObsDim, 1)
			act := randVec(rng, batch*cfg.ActDim, 1)
			hidden := randVec(rng, cfg.Layers*n0*cfg.Hidden, 0.5)
			outs := runStep(t, model, cfg, hidden, batch, obs, act)
			want := newStepWant(cfg, batch)
			for b := 0; b < batch; b++ {
				hs := testfix.ADMHidden(m)
				if b < n0 {
					for l := range hs {
						hs[l] = testfix.F64(hidden[(l*n0+b)*cfg.Hidden : (l*n0+b+1)*cfg.Hidden])
					}
				}
				want.addRow(m, b, hs, obs[b*cfg.ObsDim:(b+1)*cfg.ObsDim], act[b*cfg.ActDim:(b+1)*cfg.ActDim])
			}
			want.check(t, outs)
		})
	}
	meta := readMeta(t, model)
	wantForm := map[onnx.ADMForm]string{onnx.ADMGRUOp: "gru"}[form] // the unrolled step graph has no adm_form
	if meta[schema.MetaFreshRows] != "true" || meta[schema.MetaADMForm] != wantForm {
		t.Fatalf("metadata %s = %q, %s = %q; want true, %q", schema.MetaFreshRows, meta[schema.MetaFreshRows],
			schema.MetaADMForm, meta[schema.MetaADMForm], wantForm)
	}
}

// stepForms are the step graph's GRU forms under test.
var stepForms = []onnx.ADMForm{onnx.ADMUnrolled, onnx.ADMGRUOp}

// readMeta returns the model's metadata_props as ONNX Runtime reads them.
func readMeta(t *testing.T, model []byte) map[string]string {
	t.Helper()
	md, err := ort.GetModelMetadataWithONNXData(model)
	if err != nil {
		t.Fatal(err)
	}
	defer md.Destroy()
	keys, err := md.GetCustomMetadataMapKeys()
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for _, k := range keys {
		v, _, err := md.LookupCustomMetadataMap(k)
		if err != nil {
			t.Fatal(err)
		}
		meta[k] = v
	}
	return meta
}

// stepModel returns randADM(seed, cfg) and its exported step graph in form.
func stepModel(t *testing.T, seed int64, cfg models.ADMConfig, form onnx.ADMForm) (*models.ADM, []byte) {
	t.Helper()
	m := randADM(t, seed, cfg)
	model, err := onnx.ExportADMStepWith(m, onnx.ADMStepOptions{Form: form}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, model
}

// runStep runs the ADM step graph model on a batch of obs and act rows with
// the hidden state of its first len(hidden)/(Layers·Hidden) rows.
func runStep(t *testing.T, model []byte, cfg models.ADMConfig, hidden []float32, batch int, obs, act []float32) map[string]output {
	t.Helper()
	n0 := len(hidden) / (cfg.Layers * cfg.Hidden)
	return runORT(t, model, []input{
		{name: schema.Hidden, shape: []int64{int64(cfg.Layers), int64(n0), int64(cfg.Hidden)}, f32: hidden},
		{name: schema.Obs, shape: []int64{int64(batch), int64(cfg.ObsDim)}, f32: obs},
		{name: schema.Act, shape: []int64{int64(batch), int64(cfg.ActDim)}, f32: act},
	}, []string{schema.HiddenOut, schema.NextObsMean, schema.RewardMean, schema.LogVar})
}

// stepWant is the step graph's expected outputs for a batch, built row by
// row from the float64 reference.
type stepWant struct {
	cfg                      models.ADMConfig
	batch                    int
	hidden, next, rew, lvars []float64
}

func newStepWant(cfg models.ADMConfig, batch int) *stepWant {
	return &stepWant{cfg: cfg, batch: batch, hidden: make([]float64, cfg.Layers*batch*cfg.Hidden)}
}

// addRow advances row b's reference hidden state hs by one step on (obs,
// act) and records the row's expected outputs.
func (w *stepWant) addRow(m *models.ADM, b int, hs [][]float64, obs, act []float32) {
	o := testfix.F64(obs)
	mu, lv := testfix.ADMHead(m, testfix.ADMStep(m, hs, o, testfix.F64(act)), nil)
	for l, h := range hs {
		copy(w.hidden[(l*w.batch+b)*w.cfg.Hidden:], h)
	}
	for i := 0; i < w.cfg.ObsDim; i++ {
		w.next = append(w.next, o[i]+mu[i])
	}
	w.rew = append(w.rew, mu[w.cfg.ObsDim])
	w.lvars = append(w.lvars, lv...)
}

// check compares the step graph's outputs with w.
func (w *stepWant) check(t *testing.T, outs map[string]output) {
	t.Helper()
	B, c := int64(w.batch), w.cfg
	expect(t, outs, schema.HiddenOut, []int64{int64(c.Layers), B, int64(c.Hidden)}, w.hidden, tol)
	expect(t, outs, schema.NextObsMean, []int64{B, int64(c.ObsDim)}, w.next, tol)
	expect(t, outs, schema.RewardMean, []int64{B, 1}, w.rew, tol)
	expect(t, outs, schema.LogVar, []int64{B, int64(c.ObsDim + 1)}, w.lvars, tol)
}

// TestADMStepNaNRowStaysInItsRow: a NaN in the first obs column of a
// continuing and of a fresh row (the column the unrolled graph counts rows
// over) leaves every other row's outputs at the reference and makes the
// two rows' hidden_out and next_obs_mean NaN, as a NaN input does in the
// reference step. ONNX Runtime's CPU GRU op turns a NaN input into finite
// states, so in the gru form only the NaN column of next_obs_mean (obs +
// delta) is NaN in those rows; the ADM-Roll engines never feed a NaN (a
// non-finite next state ends its row).
func TestADMStepNaNRowStaysInItsRow(t *testing.T) {
	ortskip.IfMissing(t)
	for _, form := range stepForms {
		t.Run(form.String(), func(t *testing.T) { testADMStepNaNRow(t, form) })
	}
}

func testADMStepNaNRow(t *testing.T, form onnx.ADMForm) {
	cfg := models.ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 1, M: 3}
	m, model := stepModel(t, 16, cfg, form)
	const batch, n0 = 11, 7
	rng := rand.New(rand.NewSource(17))
	obs := randVec(rng, batch*cfg.ObsDim, 1)
	act := randVec(rng, batch*cfg.ActDim, 1)
	hidden := randVec(rng, cfg.Layers*n0*cfg.Hidden, 0.5)
	nan := map[int]bool{2: true, 9: true}
	for b := range nan {
		obs[b*cfg.ObsDim] = float32(math.NaN())
	}
	outs := runStep(t, model, cfg, hidden, batch, obs, act)
	want := newStepWant(cfg, batch)
	for b := 0; b < batch; b++ {
		hs := testfix.ADMHidden(m)
		if b < n0 {
			for l := range hs {
				hs[l] = testfix.F64(hidden[(l*n0+b)*cfg.Hidden : (l*n0+b+1)*cfg.Hidden])
			}
		}
		want.addRow(m, b, hs, obs[b*cfg.ObsDim:(b+1)*cfg.ObsDim], act[b*cfg.ActDim:(b+1)*cfg.ActDim])
	}
	got := outs[schema.HiddenOut]
	if len(got.data) != len(want.hidden) {
		t.Fatalf("hidden_out has %d values, want %d", len(got.data), len(want.hidden))
	}
	for i, w := range want.hidden {
		b := i / cfg.Hidden % batch
		g := float64(got.data[i])
		if nan[b] && form == onnx.ADMGRUOp {
			continue
		}
		if nan[b] != math.IsNaN(g) || !nan[b] && math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("hidden_out[%d] (row %d): %v, want %v", i, b, g, w)
		}
	}
	next := outs[schema.NextObsMean].data
	for i, w := range want.next {
		b := i / cfg.ObsDim
		g := float64(next[i])
		if nan[b] && form == onnx.ADMGRUOp && i%cfg.ObsDim != 0 {
			continue
		}
		if nan[b] != math.IsNaN(g) || !nan[b] && math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("next_obs_mean[%d] (row %d): %v, want %v", i, b, g, w)
		}
	}
}
