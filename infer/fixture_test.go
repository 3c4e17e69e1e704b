package infer_test

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// testOpts keeps ONNX Runtime to one thread: the test machine is shared.
var testOpts = infer.Options{Threads: 1}

// needORT skips the test when the ONNX Runtime library is not installed
// (`make setup`) and fails it when the library is there but cannot load.
func needORT(t testing.TB) {
	t.Helper()
	if err := infer.Init(); err != nil {
		if errors.Is(err, infer.ErrORTMissing) {
			t.Skipf("ONNX Runtime not installed: %v", err)
		}
		t.Fatalf("loading ONNX Runtime: %v", err)
	}
}

// admFixture is a random ADM and actor, exported and opened in every engine.
type admFixture struct {
	adm                          *models.ADM
	actor                        *models.Actor
	actorONNX, admONNX, stepONNX []byte
	pol                          *infer.Policy
	direct                       *infer.ADMDirect
	inc                          *infer.ADMIncremental
	obsDim, actDim               int
}

// smallADMConfig is the tests' model size: obs 5, act 2, 2x16 GRU, 1 ResBlock.
func smallADMConfig(m int) models.ADMConfig {
	return models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 1, M: m}
}

func newADMFixture(t testing.TB, seed int64, cfg models.ADMConfig, form onnx.ADMForm) *admFixture {
	t.Helper()
	needORT(t)
	f := &admFixture{obsDim: cfg.ObsDim, actDim: cfg.ActDim}
	f.adm = newTestADM(seed, cfg)
	low, high := make([]float64, cfg.ActDim), make([]float64, cfg.ActDim)
	for i := range low {
		low[i], high[i] = -1-0.5*float64(i), 1
	}
	f.actor = newTestActor(seed+1, cfg.ObsDim, low, high, []int{32, 32})
	var err error
	if f.actorONNX, err = onnx.ExportActor(f.actor, nil); err != nil {
		t.Fatalf("export actor: %v", err)
	}
	if f.admONNX, err = onnx.ExportADM(f.adm, onnx.ADMOptions{Form: form}, nil); err != nil {
		t.Fatalf("export ADM: %v", err)
	}
	if f.stepONNX, err = onnx.ExportADMStep(f.adm, nil); err != nil {
		t.Fatalf("export ADM step: %v", err)
	}
	if f.pol, err = infer.OpenPolicy(f.actorONNX, testOpts); err != nil {
		t.Fatalf("open policy: %v", err)
	}
	t.Cleanup(f.pol.Close)
	if f.direct, err = infer.OpenADMDirect(f.admONNX, testOpts); err != nil {
		t.Fatalf("open ADM: %v", err)
	}
	t.Cleanup(f.direct.Close)
	if f.inc, err = infer.OpenADMIncremental(f.stepONNX, testOpts); err != nil {
		t.Fatalf("open ADM step: %v", err)
	}
	t.Cleanup(f.inc.Close)
	return f
}
