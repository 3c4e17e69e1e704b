package models

import (
	"math/rand"
	"testing"
)

// TestTrainedTensorsAreParams: TrainedTensors lists the training graph's
// Params, in order, as the same slices.
func TestTrainedTensorsAreParams(t *testing.T) {
	m, err := NewADM(ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 4, Layers: 2, ResBlocks: 2, M: 2}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewADMTrainGraph(m, 3, ADMDropout, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ts := m.TrainedTensors()
	if len(ts) != len(g.Params) {
		t.Fatalf("%d tensors, graph has %d parameters", len(ts), len(g.Params))
	}
	for i, p := range g.Params {
		v := p.Value().Data().([]float32)
		if len(v) != len(ts[i]) || &v[0] != &ts[i][0] {
			t.Errorf("tensor %d is not parameter %s", i, p.Name())
		}
	}
}

// TestEnsembleTrainedTensorsAreParams: Ensemble.TrainedTensors lists the
// ensemble training graph's Params, in order, as the same slices.
func TestEnsembleTrainedTensorsAreParams(t *testing.T) {
	e := NewEnsemble(3, 2, 3, []int{5, 4}, rand.New(rand.NewSource(1)))
	g, err := NewEnsembleTrainGraph(e, 4, []float64{1e-4, 1e-4, 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ts := e.TrainedTensors()
	if len(ts) != len(g.Params) {
		t.Fatalf("%d tensors, graph has %d parameters", len(ts), len(g.Params))
	}
	for i, p := range g.Params {
		v := p.Value().Data().([]float32)
		if len(v) != len(ts[i]) || &v[0] != &ts[i][0] {
			t.Errorf("tensor %d is not parameter %s", i, p.Name())
		}
	}
}
