package infer_test

import (
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// gpuModel is one model size of the GPU checks.
type gpuModel struct {
	name  string
	cfg   models.ADMConfig
	actor []int // actor hidden layers
	scale float32
}

// gpuModels: the tests' small size and the benchmark's hopper size (obs 11,
// act 3, m 5, 3x200 GRU, 4 ResBlocks, actor 256x256, output weights scaled
// by 0.01 as in admpo bench rollout).
var gpuModels = []gpuModel{
	{"small", smallADMConfig(5), []int{32, 32}, 1},
	{"hopper", models.ADMConfig{ObsDim: 11, ActDim: 3, Hidden: 200, Layers: 3, ResBlocks: 4, M: 5}, []int{256, 256}, 0.01},
}

// newGPUModels builds gm's random ADM and actor and exports them.
func newGPUModels(t *testing.T, gm gpuModel, seed int64) (adm *models.ADM, actorONNX []byte) {
	t.Helper()
	adm = newTestADM(seed, gm.cfg)
	for i := range adm.Out.W {
		adm.Out.W[i] *= gm.scale
	}
	low, high := make([]float64, gm.cfg.ActDim), make([]float64, gm.cfg.ActDim)
	for i := range low {
		low[i], high[i] = -1-0.5*float64(i), 1
	}
	b, err := onnx.ExportActor(newTestActor(seed+1, gm.cfg.ObsDim, low, high, gm.actor), nil)
	if err != nil {
		t.Fatalf("export actor: %v", err)
	}
	return adm, b
}
