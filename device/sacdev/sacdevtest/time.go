package sacdevtest

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/sac"
)

// newBench returns a Learner at hopper's sizes with sac.New's initial
// weights and one uploaded batch.
func newBench(tb testing.TB, d device.Device, graph bool) *sacdev.Learner {
	tb.Helper()
	agent, err := sac.New(obsDim, low, high, sac.DefaultConfig(actDim))
	if err != nil {
		tb.Fatal(err)
	}
	defer agent.Close()
	cfg := ConfigOf(agent)
	cfg.Graph = graph
	l, err := sacdev.New(d, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	if err := l.SetWeights(AgentWeights(agent)); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	b := randomBatch(rng)
	if err := l.Upload(sacdev.Batch{Obs: b.Obs, Act: b.Act, Rew: b.Rew, Terminal: b.Terminal, NextObs: b.NextObs,
		EpsNext: normals(rng, batch*actDim), Eps: normals(rng, batch*actDim)}); err != nil {
		tb.Fatal(err)
	}
	return l
}

// BenchUpdate reports the milliseconds per full SAC update (hopper's
// sizes, batch 256) on d.
func BenchUpdate(b *testing.B, d device.Device) { benchUpdate(b, d, false) }

func benchUpdate(b *testing.B, d device.Device, graph bool) {
	l := newBench(b, d, graph)
	devicetest.BenchSteps(b, d, "update", l.Update)
}

// TimeUpdate logs the milliseconds per full SAC update over n updates on
// d after a warm-up, and the critic loss and α before and after (one
// batch repeated); it fails if the learner's statistics stop being finite.
func TimeUpdate(t *testing.T, d device.Device, n int) {
	l := newBench(t, d, false)
	for range 10 {
		if err := l.Update(); err != nil {
			t.Fatal(err)
		}
	}
	first, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range n {
		if err := l.Update(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	last, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: SAC update (obs %d, act %d, 256x256, batch %d): %.4f ms/update over %d updates "+
		"(critic loss %.4f -> %.4f, alpha %.4f -> %.4f on one batch)",
		d.Name(), obsDim, actDim, batch, el.Seconds()*1e3/float64(n), n, first.CriticLoss, last.CriticLoss,
		first.Alpha, last.Alpha)
	for _, v := range []float64{last.CriticLoss, last.ActorLoss, last.Alpha, last.Q1, last.Q2} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("after %d updates on one batch: %+v", n+10, last)
			break
		}
	}
}

// BenchSampleUpdate reports the milliseconds per training step as a
// trainer would run it: fresh indices and noise drawn on the host and
// uploaded (Learner.Sample from a device Replay of 10000 transitions),
// then one Update.
func BenchSampleUpdate(b *testing.B, d device.Device) {
	l := newBench(b, d, false)
	const rows = 10000
	rng := rand.New(rand.NewSource(4))
	r, err := sacdev.NewReplay(d, obsDim, actDim, normals(rng, rows*obsDim), normals(rng, rows*actDim),
		normals(rng, rows), make([]float32, rows), normals(rng, rows*obsDim))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	idx := make([]int32, batch)
	epsNext, eps := make([]float32, batch*actDim), make([]float32, batch*actDim)
	devicetest.BenchSteps(b, d, "update", func() error {
		for i := range idx {
			idx[i] = int32(rng.Intn(rows))
		}
		for i := range eps {
			epsNext[i], eps[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		if err := l.Sample(r, idx, epsNext, eps); err != nil {
			return err
		}
		return l.Update()
	})
}
