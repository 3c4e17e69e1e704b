package models

import (
	"math/rand"
	"testing"
)

// BenchmarkADMTrainStep times one ADM train step (forward, backward, Adam)
// at the reference size: hopper dims 11/3, m = 5, batch 256, 3x200 GRU.
func BenchmarkADMTrainStep(b *testing.B) {
	cfg := DefaultADMConfig(11, 3, 5)
	m, err := NewADM(cfg, rand.New(rand.NewSource(1)))
	if err != nil {
		b.Fatal(err)
	}
	const batch = 256
	a, err := NewADMTrainGraph(m, batch, ADMDropout, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	data := randomADMBatch(cfg, batch, 2)
	fillADMInputs(a, data)
	opt := NewAdam(a.Params, 3e-4)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := a.Run(); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
