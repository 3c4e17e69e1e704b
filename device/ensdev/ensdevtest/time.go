package ensdevtest

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/ensdev"
	"github.com/admpo/admpo/models"
)

// BenchStep reports the milliseconds per ensemble train step at MBPO's
// size (7 members of 4x200 swish layers, hopper's dimensions, batch 256
// per member) on d, queued directly or as a device graph.
func BenchStep(b *testing.B, d device.Device, graph bool) {
	rng := rand.New(rand.NewSource(4))
	e := models.NewEnsemble(obsDim, actDim, 7, []int{200, 200, 200, 200}, rng)
	cfg := ConfigOf(e, 256, lr, models.EnsembleDecay)
	cfg.Graph = graph
	tr, err := ensdev.New(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	if err := tr.SetWeights(e.TrainedTensors()); err != nil {
		b.Fatal(err)
	}
	bt := ensdev.Batch{}
	for range 7 {
		x, tg, w := make([]float32, 256*(obsDim+actDim)), make([]float32, 256*(obsDim+1)), make([]float32, 256)
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		for j := range tg {
			tg[j] = float32(0.5 * rng.NormFloat64())
		}
		for j := range w {
			w[j] = 1
		}
		bt.X, bt.Target, bt.Weight = append(bt.X, x), append(bt.Target, tg), append(bt.Weight, w)
	}
	if err := tr.Upload(bt); err != nil {
		b.Fatal(err)
	}
	devicetest.BenchSteps(b, d, "step", tr.Step)
}
