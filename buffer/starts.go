package buffer

import (
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/infer"
)

// SampleStarts draws n roll-out start sequences uniformly from the buffer:
// each row's current state is the observation of a stored transition, with
// up to m-1 earlier states and the actions between them, never crossing an
// episode end (the paper's "real sequences of length m-1").
func (r *Replay) SampleStarts(n, m int, rng *rand.Rand) (*infer.Start, error) {
	if r.n == 0 {
		return nil, fmt.Errorf("buffer: replay: sampling roll-out starts from an empty buffer")
	}
	if n <= 0 || m <= 0 {
		return nil, fmt.Errorf("buffer: replay: %d roll-out starts of history %d", n, m)
	}
	od, ad := r.ObsDim, r.ActDim
	s := &infer.Start{N: n, M: m, Len: make([]int, n), Obs: make([]float32, n*m*od)}
	if m > 1 {
		s.Act = make([]float32, n*(m-1)*ad)
	}
	for row := 0; row < n; row++ {
		k := rng.Intn(r.n)
		h := r.history(k, m)
		s.Len[row] = h + 1
		for j := 0; j <= h; j++ { // states k-h .. k, oldest first
			i := r.slot(k - h + j)
			copy(s.Obs[(row*m+j)*od:(row*m+j+1)*od], r.obs[i*od:(i+1)*od])
			if j < h {
				copy(s.Act[(row*(m-1)+j)*ad:(row*(m-1)+j+1)*ad], r.act[i*ad:(i+1)*ad])
			}
		}
	}
	return s, nil
}

// SampleFullStarts draws n roll-out start sequences by the authors' rule
// (sample_nstep(n, m-1) in their seq-sample buffer): a window of m-1
// consecutive transitions of one episode is drawn uniformly among all such
// windows, and the roll-out starts at the next state of its last transition
// with the window's m-1 states and actions as history. Every row has the
// full length m, so the first model step already draws k from 1..m and
// U^ADM spreads m predictions; an episode's first m-1 states never start a
// roll-out. With m = 1 it is SampleStarts.
func (r *Replay) SampleFullStarts(n, m int, rng *rand.Rand) (*infer.Start, error) {
	if m <= 1 {
		return r.SampleStarts(n, m, rng)
	}
	if n <= 0 {
		return nil, fmt.Errorf("buffer: replay: %d roll-out starts of history %d", n, m)
	}
	// Window ends: transitions with at least m-2 earlier ones in their episode.
	var ends []int
	pos := 0 // earlier transitions of k's episode in the buffer
	for k := 0; k < r.n; k++ {
		if pos >= m-2 {
			ends = append(ends, k)
		}
		pos++
		if r.end[r.slot(k)] {
			pos = 0
		}
	}
	if len(ends) == 0 {
		return nil, fmt.Errorf("buffer: replay: no episode in the buffer has the %d transitions a full roll-out start needs", m-1)
	}
	od, ad := r.ObsDim, r.ActDim
	s := &infer.Start{N: n, M: m, Len: make([]int, n), Obs: make([]float32, n*m*od), Act: make([]float32, n*(m-1)*ad)}
	for row := 0; row < n; row++ {
		e := ends[rng.Intn(len(ends))]
		s.Len[row] = m
		for j := 0; j < m-1; j++ { // the window's states and actions, oldest first
			i := r.slot(e - (m - 2) + j)
			copy(s.Obs[(row*m+j)*od:(row*m+j+1)*od], r.obs[i*od:(i+1)*od])
			copy(s.Act[(row*(m-1)+j)*ad:(row*(m-1)+j+1)*ad], r.act[i*ad:(i+1)*ad])
		}
		i := r.slot(e)
		copy(s.Obs[(row*m+m-1)*od:(row*m+m)*od], r.next[i*od:(i+1)*od])
	}
	return s, nil
}

// history is how many transitions before logical index k belong to k's
// episode, at most m-1: the walk back stops at the oldest stored transition
// and at an episode end.
func (r *Replay) history(k, m int) int {
	h := 0
	for h < m-1 && k-h-1 >= 0 && !r.end[r.slot(k-h-1)] {
		h++
	}
	return h
}

// AddTransitions appends roll-out output to the buffer (terminal = Done;
// model transitions never time out).
func (r *Replay) AddTransitions(t *infer.Transitions) error {
	od, ad := r.ObsDim, r.ActDim
	for i := 0; i < t.N; i++ {
		if err := r.Add(t.Obs[i*od:(i+1)*od], t.Act[i*ad:(i+1)*ad], t.Rew[i], t.NextObs[i*od:(i+1)*od], t.Done[i], false); err != nil {
			return err
		}
	}
	return nil
}

// Resized returns a buffer of the new capacity holding the newest
// min(Len, capacity) transitions in order, sampling with the same source.
func (r *Replay) Resized(capacity int) (*Replay, error) {
	if capacity == r.Cap {
		return r, nil
	}
	nr, err := New(r.ObsDim, r.ActDim, capacity, 0)
	if err != nil {
		return nil, err
	}
	nr.rng = r.rng
	od, ad := r.ObsDim, r.ActDim
	for k := max(0, r.n-capacity); k < r.n; k++ {
		i := r.slot(k)
		nr.Add(r.obs[i*od:(i+1)*od], r.act[i*ad:(i+1)*ad], r.rew[i], r.next[i*od:(i+1)*od], r.terminal[i], r.end[i] && !r.terminal[i])
	}
	return nr, nil
}

// Windows samples n histories of up to m real states with the action taken
// at each (the current action included), never crossing an episode end:
// obs and acts hold the rows' l_i states and actions back to back; lens
// holds each l_i.
func (r *Replay) Windows(n, m int, rng *rand.Rand) (obs, acts []float32, lens []int, err error) {
	if r.n == 0 || n <= 0 || m <= 0 {
		return nil, nil, nil, fmt.Errorf("buffer: replay: %d windows of %d from %d transitions", n, m, r.n)
	}
	od, ad := r.ObsDim, r.ActDim
	for row := 0; row < n; row++ {
		k := rng.Intn(r.n)
		h := r.history(k, m)
		for j := 0; j <= h; j++ {
			i := r.slot(k - h + j)
			obs = append(obs, r.obs[i*od:(i+1)*od]...)
			acts = append(acts, r.act[i*ad:(i+1)*ad]...)
		}
		lens = append(lens, h+1)
	}
	return obs, acts, lens, nil
}
