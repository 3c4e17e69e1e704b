package infer_test

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// testOpts keeps ONNX Runtime to one thread: the test machine is shared.
var testOpts = infer.Options{Threads: 1}

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
	ortskip.IfMissing(t)
	f := &admFixture{obsDim: cfg.ObsDim, actDim: cfg.ActDim}
	f.adm = newTestADM(seed, cfg)
	low, high := make([]float64, cfg.ActDim), make([]float64, cfg.ActDim)
	for i := range low {
		low[i], high[i] = -1-0.5*float64(i), 1
	}
	f.actor = newTestActor(seed+1, cfg.ObsDim, low, high, []int{32, 32})
	var err error
	f.actorONNX, err = onnx.ExportActor(f.actor, nil)
	f.pol = openEngine(t, "actor", f.actorONNX, err, infer.OpenPolicy, testOpts)
	f.admONNX, err = onnx.ExportADM(f.adm, onnx.ADMOptions{Form: form}, nil)
	f.direct = openEngine(t, "ADM", f.admONNX, err, infer.OpenADMDirect, testOpts)
	f.stepONNX, err = onnx.ExportADMStep(f.adm, nil)
	f.inc = openEngine(t, "ADM step", f.stepONNX, err, infer.OpenADMIncremental, testOpts)
	return f
}

// openEngine opens an exported model with open and closes it when the test
// ends; exportErr is the export's error and what names the model.
func openEngine[E interface{ Close() }](t testing.TB, what string, model []byte, exportErr error, open func([]byte, infer.Options) (E, error), opts infer.Options) E {
	t.Helper()
	if exportErr != nil {
		t.Fatalf("export %s: %v", what, exportErr)
	}
	e, err := open(model, opts)
	if err != nil {
		t.Fatalf("open %s: %v", what, err)
	}
	t.Cleanup(e.Close)
	return e
}

// rollSeeded rolls the policy p out with r from start, drawing from a
// generator seeded with seed; an error fails t.
func rollSeeded(t testing.TB, r infer.Roller, p *infer.Policy, start *infer.Start, cfg infer.RollConfig, seed int64) *infer.Transitions {
	t.Helper()
	tr, err := r.Rollout(p, start, cfg, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
