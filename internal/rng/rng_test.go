package rng

import "testing"

func TestSaveRestoreContinuesTheSequence(t *testing.T) {
	r, s := New(42)
	for i := 0; i < 1000; i++ {
		r.NormFloat64()
	}
	state, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 100)
	for i := range want {
		want[i] = r.NormFloat64() + float64(r.Intn(7))
	}
	r2, s2 := New(1)
	if err := s2.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got := r2.NormFloat64() + float64(r2.Intn(7)); got != want[i] {
			t.Fatalf("draw %d after restore: %v, want %v", i, got, want[i])
		}
	}
	if err := s2.UnmarshalBinary([]byte("junk")); err == nil {
		t.Error("junk state accepted")
	}
}

func TestSeedsDifferAndRepeat(t *testing.T) {
	a, _ := New(1)
	b, _ := New(1)
	c, _ := New(2)
	same, diff := true, false
	for i := 0; i < 50; i++ {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Errorf("same seed equal: %v, different seeds differ: %v", same, diff)
	}
	// Mean and variance of the uniform draws are those of U(0,1).
	var s, s2 float64
	const n = 200000
	for i := 0; i < n; i++ {
		u := a.Float64()
		s += u
		s2 += u * u
	}
	mean, v := s/n, s2/n-(s/n)*(s/n)
	if mean < 0.497 || mean > 0.503 || v < 1.0/12-0.002 || v > 1.0/12+0.002 {
		t.Errorf("U(0,1) mean %v var %v", mean, v)
	}
}
