package sacdev_test

import (
	"testing"

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
