package sac

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/models"
)

// TestBCImitatesALinearPolicy clones a known linear policy a = K s (inside
// the action bounds) from 2000 transitions and checks the loss falls and the
// deterministic actions on fresh states match K s.
func TestBCImitatesALinearPolicy(t *testing.T) {
	const od, ad, n = 4, 2, 2000
	rng := rand.New(rand.NewSource(9))
	K := [ad][od]float64{{0.3, -0.2, 0.1, 0.15}, {-0.1, 0.25, 0.2, -0.2}}
	policy := func(s []float32) []float32 {
		a := make([]float32, ad)
		for i := range a {
			var v float64
			for j := range s {
				v += K[i][j] * float64(s[j])
			}
			a[i] = float32(math.Max(-0.9, math.Min(0.9, v)))
		}
		return a
	}
	state := func() []float32 {
		s := make([]float32, od)
		for j := range s {
			s[j] = float32(rng.NormFloat64())
		}
		return s
	}
	data, _ := buffer.New(od, ad, n, 1)
	for i := 0; i < n; i++ {
		s := state()
		data.Add(s, policy(s), 0, s, false, i%100 == 99)
	}
	actor := models.NewActor(od, []float64{-1, -1}, []float64{1, 1}, []int{64, 64}, rng)
	bc, err := NewBC(actor, 64, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	batch := buffer.NewBatch(64, od, ad)
	evalLoss := func() float64 {
		var s float64
		for i := 0; i < 10; i++ {
			data.Sample(batch)
			l, err := bc.Loss(batch)
			if err != nil {
				t.Fatal(err)
			}
			s += l / 10
		}
		return s
	}
	first := evalLoss()
	for i := 0; i < 1500; i++ {
		if err := data.Sample(batch); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Update(batch); err != nil {
			t.Fatal(err)
		}
	}
	last := evalLoss()
	if !(last < first/20) {
		t.Fatalf("BC loss %.5f -> %.5f: want a 20x drop", first, last)
	}
	sc := DefaultConfig(ad)
	sc.Hidden, sc.BatchSize = []int{64, 64}, 64
	sac, err := New(od, []float64{-1, -1}, []float64{1, 1}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer sac.Close()
	for i := range sac.Actor.Net.Layers { // act with the cloned weights
		copy(sac.Actor.Net.Layers[i].W, actor.Net.Layers[i].W)
		copy(sac.Actor.Net.Layers[i].B, actor.Net.Layers[i].B)
	}
	var mae float64
	const m = 300
	for i := 0; i < m; i++ {
		s := state()
		a, err := sac.Act(s, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := policy(s)
		for j := range a {
			mae += math.Abs(float64(a[j]-want[j])) / (m * ad)
		}
	}
	t.Logf("loss %.5f -> %.5f, held-out mean |a - K s| = %.4f", first, last, mae)
	if mae > 0.05 {
		t.Fatalf("held-out mean absolute action error %.4f, want < 0.05", mae)
	}
}
