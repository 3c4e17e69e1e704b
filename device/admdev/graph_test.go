package admdev

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device/emu"
)

// TestGraphReplaysTheStep: a trainer that records its step as a graph (emu
// records) ends bit for bit where one that queues every step directly
// ends, four steps on, with dropout; the second step is recorded.
func TestGraphReplaysTheStep(t *testing.T) {
	cfg := Config{ObsDim: 3, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 2, M: 3, Batch: 5, LR: 1e-3, Dropout: 0.25, Eps: 1e-5}
	rng := rand.New(rand.NewSource(1))
	var w [][]float32
	for _, n := range cfg.Sizes() {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(0.3 * rng.NormFloat64())
		}
		w = append(w, x)
	}
	rows := cfg.rows()
	b := Batch{X: make([]float32, rows*cfg.in()), Target: make([]float32, rows*cfg.d()), Weight: make([]float32, rows)}
	for _, s := range [][]float32{b.X, b.Target} {
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
	}
	for i := range b.Weight {
		b.Weight[i] = float32(i % 2)
	}
	run := func(graph bool) ([][]float32, *Trainer) {
		d := emu.New()
		t.Cleanup(func() { _ = d.Close() })
		c := cfg
		c.Graph = graph
		tr, err := New(d, c, 7)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		if err := tr.Upload(b); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := tr.Step(); err != nil {
				t.Fatal(err)
			}
		}
		got := make([][]float32, len(w))
		for i := range got {
			got[i] = make([]float32, len(w[i]))
		}
		if err := tr.WeightsInto(got); err != nil {
			t.Fatal(err)
		}
		return got, tr
	}
	want, direct := run(false)
	got, graphed := run(true)
	if direct.replay.Recorded() || !graphed.replay.Recorded() {
		t.Fatalf("graphs: direct %v, graphed %v", direct.replay.Recorded(), graphed.replay.Recorded())
	}
	if direct.DropoutState() != graphed.DropoutState() {
		t.Errorf("dropout state %#x, direct %#x", graphed.DropoutState(), direct.DropoutState())
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("tensor %d[%d] = %v with the graph, %v without", i, j, got[i][j], want[i][j])
			}
		}
	}
	_ = graphed.Close()
	_ = direct.Close()
}
