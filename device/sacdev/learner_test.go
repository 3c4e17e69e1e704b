package sacdev_test

import (
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

func okConfig() sacdev.Config {
	return sacdev.Config{ObsDim: 3, ActDim: 2, Hidden: []int{4}, Batch: 5, Gamma: 0.99, Tau: 0.005,
		ActorLR: 1e-3, CriticLR: 1e-3, AlphaLR: 1e-3, AutoAlpha: true, TargetEntropy: -2,
		LogStdMin: -5, LogStdMax: 2, Scale: []float32{1, 1}, Bias: []float32{0, 0}}
}

func TestNewErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	for name, mod := range map[string]func(*sacdev.Config){
		"obs":     func(c *sacdev.Config) { c.ObsDim = 0 },
		"batch":   func(c *sacdev.Config) { c.Batch = 0 },
		"hidden":  func(c *sacdev.Config) { c.Hidden = []int{4, 0} },
		"scale":   func(c *sacdev.Config) { c.Scale = []float32{1} },
		"log std": func(c *sacdev.Config) { c.LogStdMax = c.LogStdMin },
	} {
		c := okConfig()
		mod(&c)
		if _, err := sacdev.New(d, c); err == nil {
			t.Errorf("New with a bad %s succeeded", name)
		}
	}
}

func TestShapeErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	l, err := sacdev.New(d, okConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stats(); err == nil {
		t.Error("Stats before any update succeeded")
	}
	b := sacdev.Batch{Obs: make([]float32, 15), Act: make([]float32, 10), Rew: make([]float32, 5),
		Terminal: make([]float32, 5), NextObs: make([]float32, 15), EpsNext: make([]float32, 10), Eps: make([]float32, 9)}
	if err := l.Upload(b); err == nil {
		t.Error("Upload with short noise succeeded")
	}
	if err := l.SetWeights(sacdev.Weights{}); err == nil {
		t.Error("SetWeights without tensors succeeded")
	}
	w, err := l.Weights()
	if err != nil {
		t.Fatal(err)
	}
	w.Critic2[1] = w.Critic2[1][:1]
	if err := l.SetWeights(w); err == nil {
		t.Error("SetWeights with a short tensor succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkUpdate times the update on emu (OpenBLAS on the host).
func BenchmarkUpdate(b *testing.B) {
	d := emu.New()
	defer d.Close()
	sacdevtest.BenchUpdate(b, d)
}

// BenchmarkSampleUpdate times Sample + Update on emu.
func BenchmarkSampleUpdate(b *testing.B) {
	d := emu.New()
	defer d.Close()
	sacdevtest.BenchSampleUpdate(b, d)
}

// TestOptimRoundTrip: the optimiser state read after updates sets back
// exactly, and SetOptim refuses wrong sizes and negative counts.
func TestOptimRoundTrip(t *testing.T) {
	d := emu.New()
	defer d.Close()
	cfg := okConfig()
	cfg.Batch, cfg.ActorEvery = 2, 1
	l, err := sacdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Small non-zero weights: the actor maps 3 inputs to 2·ActDim, the
	// critics 3+2 to 1, through one hidden layer of 4.
	tensors := func(in, out int) [][]float32 {
		var ps [][]float32
		for _, n := range []int{in * 4, 4, 4 * out, out} {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(i%5-2) * 0.1
			}
			ps = append(ps, v)
		}
		return ps
	}
	if err := l.SetWeights(sacdev.Weights{Actor: tensors(3, 4), Critic1: tensors(5, 1), Critic2: tensors(5, 1),
		Target1: tensors(5, 1), Target2: tensors(5, 1)}); err != nil {
		t.Fatal(err)
	}
	b := sacdev.Batch{Obs: []float32{1, 2, 3, -1, 0, 1}, Act: []float32{0.1, -0.2, 0.3, 0}, Rew: []float32{1, -1},
		Terminal: []float32{0, 1}, NextObs: []float32{0, 1, 2, 3, 2, 1}, EpsNext: []float32{0.5, -1, 0, 1},
		Eps: []float32{1, 0.2, -0.3, 0}}
	for range 3 {
		if err := l.Upload(b); err != nil {
			t.Fatal(err)
		}
		if err := l.Update(); err != nil {
			t.Fatal(err)
		}
	}
	o, err := l.Optim()
	if err != nil {
		t.Fatal(err)
	}
	if o.Updates != 3 || o.ActorT != 3 || o.CriticT != 3 || o.AlphaT != 3 || len(o.CriticM) != 8 || o.AlphaV == 0 {
		t.Fatalf("optimiser state %+v", o)
	}
	o2 := o
	o2.Updates, o2.AlphaM = 7, 0.25
	if err := l.SetOptim(o2); err != nil {
		t.Fatal(err)
	}
	got, err := l.Optim()
	if err != nil {
		t.Fatal(err)
	}
	if got.Updates != 7 || l.Updates() != 7 || got.AlphaM != 0.25 || got.CriticV[7][0] != o.CriticV[7][0] {
		t.Fatalf("after SetOptim: %+v", got)
	}
	o2.CriticM = o2.CriticM[:7]
	if err := l.SetOptim(o2); err == nil {
		t.Error("SetOptim took 7 critic moment tensors")
	}
	o2 = o
	o2.ActorT = -1
	if err := l.SetOptim(o2); err == nil {
		t.Error("SetOptim took a negative step count")
	}
}

// TestGraph: an update recorded once as an emu graph and replayed equals
// the direct updates bit for bit.
func TestGraph(t *testing.T) {
	d := emu.New()
	defer d.Close()
	sacdevtest.CompareGraph(t, d, 0)
}

// notCapturer hides emu's BeginCapture and EndCapture.
type notCapturer struct{ device.Device }

func TestGraphErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	c := okConfig()
	c.Graph = true
	if _, err := sacdev.New(notCapturer{d}, c); err == nil {
		t.Error("a graph on a device that cannot record one: no error")
	}
	c.ActorEvery = 2
	if _, err := sacdev.New(d, c); err == nil {
		t.Error("a graph with the actor every 2 updates: no error")
	}
}
