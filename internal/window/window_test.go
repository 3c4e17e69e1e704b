package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// naive is a reference history kept as plain slices of slices.
type naive struct {
	states, acts [][]float32 // acts[j] is the action taken in states[j]
}

func vec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()
	}
	return v
}

// TestWindowMatchesNaiveHistory drives a window and a slice-of-slices
// reference with the same random pushes, actions and loads, and compares
// every row's states and actions after each operation.
func TestWindowMatchesNaiveHistory(t *testing.T) {
	const rows, m, od, ad = 4, 3, 2, 1
	rng := rand.New(rand.NewPCG(1, 2))
	w := New(rows, m, od, ad)
	ref := make([]naive, rows)
	for r := range rows {
		s := vec(rng, od)
		w.Load(r, [][]float32{s}, nil)
		ref[r] = naive{states: [][]float32{s}, acts: [][]float32{nil}}
	}
	for step := range 200 {
		r := rng.IntN(rows)
		switch rng.IntN(3) {
		case 0: // act, then push the next state
			a, s := vec(rng, ad), vec(rng, od)
			w.SetAction(r, a)
			w.Push(r, s)
			n := &ref[r]
			n.acts[len(n.acts)-1] = a
			n.states, n.acts = append(n.states, s), append(n.acts, nil)
			if len(n.states) > m {
				n.states, n.acts = n.states[1:], n.acts[1:]
			}
		case 1: // load a history longer or shorter than m
			l := 1 + rng.IntN(2*m)
			var ss, as [][]float32
			for range l {
				ss, as = append(ss, vec(rng, od)), append(as, vec(rng, ad))
			}
			w.Load(r, ss, as[:l-1])
			keep := min(l, m)
			n := naive{states: slices.Clone(ss[l-keep:]), acts: slices.Clone(as[l-keep:])}
			n.acts[keep-1] = nil
			ref[r] = n
		default: // set the current action only
			a := vec(rng, ad)
			w.SetAction(r, a)
			ref[r].acts[len(ref[r].acts)-1] = a
		}
		for q := range rows {
			n := ref[q]
			if w.Len[q] != len(n.states) {
				t.Fatalf("step %d row %d: %d states, want %d", step, q, w.Len[q], len(n.states))
			}
			if !slices.Equal(w.Current(q), n.states[len(n.states)-1]) {
				t.Fatalf("step %d row %d: current %v, want %v", step, q, w.Current(q), n.states[len(n.states)-1])
			}
			for j := range n.states {
				if !slices.Equal(w.State(q, j), n.states[j]) {
					t.Fatalf("step %d row %d state %d: %v, want %v", step, q, j, w.State(q, j), n.states[j])
				}
				if n.acts[j] != nil && !slices.Equal(w.Action(q, j), n.acts[j]) {
					t.Fatalf("step %d row %d action %d: %v, want %v", step, q, j, w.Action(q, j), n.acts[j])
				}
			}
		}
	}
}

// TestWindowRowsDoNotOverlap checks that a push on one row leaves the
// others' memory untouched, also when the row is full and shifts.
func TestWindowRowsDoNotOverlap(t *testing.T) {
	w := New(3, 2, 2, 1)
	for r := range 3 {
		w.Load(r, [][]float32{{float32(r), 0}, {float32(r), 1}}, [][]float32{{float32(10 + r)}})
	}
	before0, before2 := slices.Clone(w.S[:4]), slices.Clone(w.S[8:])
	w.SetAction(1, []float32{99})
	w.Push(1, []float32{7, 7})
	if !slices.Equal(w.S[:4], before0) || !slices.Equal(w.S[8:], before2) {
		t.Fatalf("push on row 1 changed rows 0 or 2: %v", w.S)
	}
	if got := w.State(1, 0); !slices.Equal(got, []float32{1, 1}) {
		t.Fatalf("row 1 oldest state after shift %v, want [1 1]", got)
	}
	if got := w.Action(1, 0); got[0] != 99 {
		t.Fatalf("row 1 oldest action after shift %v, want [99]", got)
	}
}
