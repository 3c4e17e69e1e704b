package onnx_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// TestADMStepFreshRows checks the step graph with a hidden input shorter
// than the batch: the first n0 rows continue from their (random) hidden
// states, the others start from the zero state. The reference is the
// plain-Go GRU step and head of reference_test.go, with zero hidden states
// for the fresh rows. n0 = batch is the plain step, n0 = 0 a batch of
// fresh rows only; the metadata says fresh_rows=true.
func TestADMStepFreshRows(t *testing.T) {
	initORT(t)
	cfg := models.ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 16, Layers: 3, ResBlocks: 1, M: 3}
	m := randADM(t, 14, cfg)
	model, err := onnx.ExportADMStep(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	const batch = 11
	for _, n0 := range []int{batch, 7, 1, 0} {
		t.Run(fmt.Sprintf("n0=%d", n0), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(15 + n0)))
			obs := randVec(rng, batch*cfg.ObsDim, 1)
			act := randVec(rng, batch*cfg.ActDim, 1)
			hidden := randVec(rng, cfg.Layers*n0*cfg.Hidden, 0.5)
			outs := runORT(t, model, []input{
				{name: schema.Hidden, shape: []int64{int64(cfg.Layers), int64(n0), int64(cfg.Hidden)}, f32: hidden},
				{name: schema.Obs, shape: []int64{batch, int64(cfg.ObsDim)}, f32: obs},
				{name: schema.Act, shape: []int64{batch, int64(cfg.ActDim)}, f32: act},
			}, []string{schema.HiddenOut, schema.NextObsMean, schema.RewardMean, schema.LogVar})
			wantH := make([]float64, cfg.Layers*batch*cfg.Hidden)
			var wantN, wantR, wantL []float64
			for b := 0; b < batch; b++ {
				o := f64(obs[b*cfg.ObsDim : (b+1)*cfg.ObsDim])
				x := refNormalize(append(append([]float64(nil), o...), f64(act[b*cfg.ActDim:(b+1)*cfg.ActDim])...), &m.Norm)
				for l := range m.GRU {
					h := make([]float64, cfg.Hidden)
					if b < n0 {
						h = f64(hidden[(l*n0+b)*cfg.Hidden : (l*n0+b+1)*cfg.Hidden])
					}
					x = refGRUStep(&m.GRU[l], x, h)
					copy(wantH[(l*batch+b)*cfg.Hidden:], x)
				}
				mu, lv := refADMHead(m, x)
				for i := 0; i < cfg.ObsDim; i++ {
					wantN = append(wantN, o[i]+mu[i])
				}
				wantR = append(wantR, mu[cfg.ObsDim])
				wantL = append(wantL, lv...)
			}
			expect(t, outs, schema.HiddenOut, []int64{int64(cfg.Layers), batch, int64(cfg.Hidden)}, wantH, tol)
			expect(t, outs, schema.NextObsMean, []int64{batch, int64(cfg.ObsDim)}, wantN, tol)
			expect(t, outs, schema.RewardMean, []int64{batch, 1}, wantR, tol)
			expect(t, outs, schema.LogVar, []int64{batch, int64(cfg.ObsDim + 1)}, wantL, tol)
		})
	}
	meta := readMeta(t, model)
	if meta[schema.MetaFreshRows] != "true" {
		t.Fatalf("metadata %s = %q, want true", schema.MetaFreshRows, meta[schema.MetaFreshRows])
	}
}

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
