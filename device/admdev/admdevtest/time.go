package admdevtest

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/models"
)

// BenchBatch is issue 32's benchmark batch: 256 start states at the
// Reference size (m = 5).
const BenchBatch = 256

// newBench returns a Trainer at the Reference size with models.NewADM's
// initial weights and one uploaded batch, recording its step as a device
// graph when graph is set.
func newBench(tb testing.TB, d device.Device, graph bool) *admdev.Trainer {
	tb.Helper()
	m, err := models.NewADM(Reference, rand.New(rand.NewSource(1)))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := models.NewADMTrainGraph(m, BenchBatch, models.ADMDropout, 1)
	if err != nil {
		tb.Fatal(err)
	}
	defer g.Close()
	cfg, err := ConfigOf(m, BenchBatch, lr, models.ADMDropout)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Graph = graph
	tr, err := admdev.New(d, cfg, 1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tr.Close() })
	if err := tr.SetWeights(m.TrainedTensors()); err != nil {
		tb.Fatal(err)
	}
	if err := tr.Upload(randomBatch(g, rand.New(rand.NewSource(3)))); err != nil {
		tb.Fatal(err)
	}
	return tr
}

// BenchStep reports the milliseconds per ADM train step (forward,
// backward, Adam; Reference size, batch 256) on d, recorded once as a
// device graph and replayed when graph is set.
func BenchStep(b *testing.B, d device.Device, graph bool) {
	tr := newBench(b, d, graph)
	devicetest.BenchSteps(b, d, "step", tr.Step)
}

// TimeStep logs the milliseconds per ADM train step over n steps on d after
// a warm-up (recorded once as a device graph and replayed when graph is
// set), and the loss before and after (one batch repeated); it fails if the
// loss stops being finite.
func TimeStep(t *testing.T, d device.Device, n int, graph bool) {
	tr := newBench(t, d, graph)
	for range 3 {
		if err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	first, _, err := tr.Loss()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range n {
		if err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	last, _, err := tr.Loss()
	if err != nil {
		t.Fatal(err)
	}
	c := Reference
	t.Logf("%s: ADM train step (obs %d, act %d, m %d, %dx%d GRU, %d ResBlocks, batch %d; device graph %v): %.4f ms/step "+
		"over %d steps (loss %.4f -> %.4f on one batch)", d.Name(), c.ObsDim, c.ActDim, c.M, c.Layers, c.Hidden, c.ResBlocks,
		BenchBatch, graph, el.Seconds()*1e3/float64(n), n, first, last)
	if math.IsNaN(float64(last)) || math.IsInf(float64(last), 0) {
		t.Errorf("loss %v after %d steps on one batch", last, n+3)
	}
}
