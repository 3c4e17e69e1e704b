package buffer

import (
	"math/rand"
	"testing"
)

// chiSquare returns Σ (obs-exp)²/exp for counts against a uniform expectation.
func chiSquare(counts []int, total int) float64 {
	exp := float64(total) / float64(len(counts))
	s := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		s += d * d / exp
	}
	return s
}

// chi2Crit49 is the 0.999 quantile of the chi-square distribution with 49
// degrees of freedom (tables: 85.35).
const chi2Crit49 = 85.35

// TestReplaySampleUniform fills a wrapped ring buffer and checks that Sample
// returns only stored transitions, with intact rows, uniformly (chi-square).
func TestReplaySampleUniform(t *testing.T) {
	const capacity = 50
	r, err := New(2, 1, capacity, 1)
	if err != nil {
		t.Fatal(err)
	}
	// 80 transitions: the first 30 are overwritten.
	for i := 0; i < 80; i++ {
		v := float32(i)
		if err := r.Add([]float32{v, -v}, []float32{v + 0.5}, v*10, []float32{v + 1, -v - 1}, i%7 == 0, false); err != nil {
			t.Fatal(err)
		}
	}
	if r.Len() != capacity {
		t.Fatalf("Len = %d, want %d", r.Len(), capacity)
	}
	counts := make([]int, capacity)
	b := NewBatch(500, 2, 1)
	const rounds = 200
	for k := 0; k < rounds; k++ {
		if err := r.Sample(b); err != nil {
			t.Fatal(err)
		}
		for row := 0; row < b.N; row++ {
			i := int(b.Obs[2*row])
			if i < 30 || i >= 80 {
				t.Fatalf("sampled overwritten or unknown transition %d", i)
			}
			v := float32(i)
			if b.Obs[2*row+1] != -v || b.Act[row] != v+0.5 || b.Rew[row] != v*10 ||
				b.NextObs[2*row] != v+1 || b.NextObs[2*row+1] != -v-1 {
				t.Fatalf("row %d of transition %d is torn: %v %v %v %v", row, i, b.Obs[2*row:2*row+2], b.Act[row], b.Rew[row], b.NextObs[2*row:2*row+2])
			}
			wantTerm := float32(0)
			if i%7 == 0 {
				wantTerm = 1
			}
			if b.Terminal[row] != wantTerm {
				t.Fatalf("transition %d terminal %v, want %v", i, b.Terminal[row], wantTerm)
			}
			counts[i-30]++
		}
	}
	if x := chiSquare(counts, rounds*b.N); x > chi2Crit49 {
		t.Fatalf("chi-square %.1f > %.1f: sampling is not uniform (counts %v)", x, chi2Crit49, counts)
	}
}

// TestReplaySampleRows checks that SampleRows fills only its rows, so two
// buffers can share one batch, and that bad requests fail.
func TestReplaySampleRows(t *testing.T) {
	a, _ := New(1, 1, 10, 2)
	m, _ := New(1, 1, 10, 3)
	_ = a.Add([]float32{1}, []float32{1}, 1, []float32{1}, false, false)
	_ = m.Add([]float32{2}, []float32{2}, 2, []float32{2}, false, false)
	b := NewBatch(10, 1, 1)
	if err := a.SampleRows(b, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := m.SampleRows(b, 3, 7); err != nil {
		t.Fatal(err)
	}
	for row := 0; row < 10; row++ {
		want := float32(2)
		if row < 3 {
			want = 1
		}
		if b.Obs[row] != want || b.Rew[row] != want {
			t.Fatalf("row %d holds %v/%v, want %v", row, b.Obs[row], b.Rew[row], want)
		}
	}
	if err := a.SampleRows(b, 8, 3); err == nil {
		t.Error("rows past the batch end were accepted")
	}
	empty, _ := New(1, 1, 4, 1)
	if err := empty.Sample(b); err == nil {
		t.Error("sampling an empty buffer succeeded")
	}
	if err := a.Add([]float32{1, 2}, []float32{1}, 0, []float32{1}, false, false); err == nil {
		t.Error("an observation of the wrong size was accepted")
	}
}

// seqEpisode describes one generated episode for the sequence test.
type seqEpisode struct {
	length  int
	timeout bool
}

// TestReplaySequences fills a wrapped buffer with episodes of random lengths
// ending in terminals or timeouts, plus an unfinished last episode. Each
// transition encodes (episode, step) in its observation, so every sampled
// sequence can be checked independently: valid steps stay in the start's
// episode and are consecutive, Len = min(m, steps left in the episode, steps
// stored), masks match Len and invalid steps are zero. Starts must be uniform.
func TestReplaySequences(t *testing.T) {
	const capacity, m = 300, 5
	rng := rand.New(rand.NewSource(9))
	r, err := New(2, 1, capacity, 10)
	if err != nil {
		t.Fatal(err)
	}
	var eps []seqEpisode
	total := 0
	for total < 700 {
		e := seqEpisode{length: 1 + rng.Intn(12), timeout: rng.Intn(2) == 0}
		eps = append(eps, e)
		total += e.length
	}
	unfinished := 4 // steps of a last episode without an end flag
	for ei, e := range eps {
		for s := 0; s < e.length; s++ {
			last := s == e.length-1
			err := r.Add([]float32{float32(ei), float32(s)}, []float32{float32(ei*100 + s)}, float32(s),
				[]float32{float32(ei), float32(s + 1)}, last && !e.timeout, last && e.timeout)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	lastEp := len(eps)
	for s := 0; s < unfinished; s++ {
		_ = r.Add([]float32{float32(lastEp), float32(s)}, []float32{float32(lastEp*100 + s)}, float32(s),
			[]float32{float32(lastEp), float32(s + 1)}, false, false)
	}
	lengthOf := func(ep int) int {
		if ep == lastEp {
			return unfinished
		}
		return eps[ep].length
	}
	const batch, rounds = 400, 25
	b := NewSeqBatch(batch, m, 2, 1)
	starts := map[[2]int]int{}
	for round := 0; round < rounds; round++ {
		if err := r.SampleSequencesInto(b); err != nil {
			t.Fatal(err)
		}
		for row := 0; row < batch; row++ {
			ep, step := int(b.Obs0[2*row]), int(b.Obs0[2*row+1])
			starts[[2]int{ep, step}]++
			want := min(m, lengthOf(ep)-step)
			if b.Len[row] != want {
				t.Fatalf("start (%d,%d): Len %d, want %d", ep, step, b.Len[row], want)
			}
			for j := 0; j < m; j++ {
				at := row*m + j
				next := b.NextObs[2*at : 2*at+2]
				if j < want {
					if b.Mask[at] != 1 || next[0] != float32(ep) || next[1] != float32(step+j+1) ||
						b.Act[at] != float32(ep*100+step+j) || b.Rew[at] != float32(step+j) {
						t.Fatalf("start (%d,%d) step %d: mask %v next %v act %v rew %v", ep, step, j, b.Mask[at], next, b.Act[at], b.Rew[at])
					}
				} else if b.Mask[at] != 0 || next[0] != 0 || next[1] != 0 || b.Act[at] != 0 || b.Rew[at] != 0 {
					t.Fatalf("start (%d,%d) invalid step %d not zeroed: mask %v next %v act %v rew %v", ep, step, j, b.Mask[at], next, b.Act[at], b.Rew[at])
				}
			}
		}
	}
	if len(starts) != capacity {
		t.Fatalf("%d distinct starts sampled, want all %d stored transitions", len(starts), capacity)
	}
	// Chi-square over the starts, pooled into 50 bins of 6 transitions.
	counts := make([]int, 50)
	for k := 0; k < capacity; k++ {
		row := 0
		tb := NewSeqBatch(1, 1, 2, 1)
		if err := r.SequenceAt(k, tb, row); err != nil {
			t.Fatal(err)
		}
		counts[k/6] += starts[[2]int{int(tb.Obs0[0]), int(tb.Obs0[1])}]
	}
	if x := chiSquare(counts, batch*rounds); x > chi2Crit49 {
		t.Fatalf("chi-square %.1f > %.1f: starts are not uniform", x, chi2Crit49)
	}
	if err := r.SequenceAt(capacity, b, 0); err == nil {
		t.Error("a start past the newest transition was accepted")
	}
}
