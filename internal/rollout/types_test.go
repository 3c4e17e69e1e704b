package rollout

import "testing"

// TestTransitionsGrow: NewTransitions is empty with room for its rows, and
// Grow lengthens every per-row slice by n rows (obs and actions by their
// widths) within that room, leaving MeanNextObs alone.
func TestTransitionsGrow(t *testing.T) {
	const n, od, ad = 10, 3, 2
	tr := NewTransitions(n, od, ad)
	if tr.N != 0 || len(tr.Obs) != 0 || cap(tr.Obs) != n*od || cap(tr.Act) != n*ad || cap(tr.Back) != n || tr.MeanNextObs != nil {
		t.Fatalf("NewTransitions: N %d, obs %d/%d, act cap %d, back cap %d", tr.N, len(tr.Obs), cap(tr.Obs), cap(tr.Act), cap(tr.Back))
	}
	obs := &tr.Obs[:1][0]
	tr.Grow(4, od, ad)
	tr.Grow(6, od, ad)
	if &tr.Obs[0] != obs {
		t.Error("Grow within the room moved Obs")
	}
	for name, l := range map[string][2]int{
		"Obs": {len(tr.Obs), n * od}, "Act": {len(tr.Act), n * ad}, "Rew": {len(tr.Rew), n}, "NextObs": {len(tr.NextObs), n * od},
		"Done": {len(tr.Done), n}, "Uncertainty": {len(tr.Uncertainty), n}, "Step": {len(tr.Step), n}, "Back": {len(tr.Back), n},
	} {
		if l[0] != l[1] {
			t.Errorf("%s has %d values, want %d", name, l[0], l[1])
		}
	}
	if tr.N != n || tr.MeanNextObs != nil {
		t.Errorf("N %d (want %d), MeanNextObs %v", tr.N, n, tr.MeanNextObs)
	}
	tr.Grow(1, od, ad) // past the room
	if tr.N != n+1 || len(tr.Obs) != (n+1)*od || len(tr.Back) != n+1 {
		t.Errorf("past the room: N %d, %d obs values, %d back", tr.N, len(tr.Obs), len(tr.Back))
	}
}

// TestDoneFunc: without a DoneSpec DoneFunc is Done itself (nil stays nil);
// with one it is the spec's Eval, or Done's verdict or the spec's; a spec
// that does not fit the observation size is an error.
func TestDoneFunc(t *testing.T) {
	if f, err := (&RollConfig{}).DoneFunc(3); f != nil || err != nil {
		t.Fatalf("no Done, no spec: %v, %v", f != nil, err)
	}
	calls := 0
	done := func(o []float32) bool { calls++; return o[0] > 1 }
	f, err := (&RollConfig{Done: done}).DoneFunc(3)
	if err != nil || !f([]float32{2, 0, 0}) || f([]float32{0, 0, 0}) || calls != 2 {
		t.Fatalf("Done alone: err %v, calls %d", err, calls)
	}
	spec := &DoneSpec{Ranges: []Range{{Dim: 2, Hi: 5, HasHi: true}}}
	f, err = (&RollConfig{DoneSpec: spec}).DoneFunc(3)
	if err != nil || !f([]float32{0, 0, 5}) || f([]float32{9, 0, 4}) {
		t.Fatalf("spec alone: %v", err)
	}
	f, err = (&RollConfig{Done: done, DoneSpec: spec}).DoneFunc(3)
	if err != nil || !f([]float32{0, 0, 5}) || !f([]float32{9, 0, 4}) || f([]float32{0, 0, 4}) {
		t.Fatalf("both: %v", err)
	}
	if _, err := (&RollConfig{DoneSpec: spec}).DoneFunc(2); err == nil {
		t.Fatal("a spec on dimension 2 of 2 values: no error")
	}
}
