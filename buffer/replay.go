package buffer

import (
	"fmt"
	"math/rand"
)

// Replay is a fixed-capacity ring buffer of transitions. When full, a new
// transition overwrites the oldest. Transitions are kept in insertion order,
// which sequence sampling relies on: consecutive transitions of one episode
// must be added one after the other, and every episode's last transition must
// carry terminal or timeout.
type Replay struct {
	ObsDim, ActDim, Cap int

	obs, act, next []float32 // [Cap·ObsDim], [Cap·ActDim], [Cap·ObsDim]
	rew            []float32 // [Cap]
	terminal       []bool    // the environment terminated after this transition
	end            []bool    // the episode ended here (terminal or timeout)
	n, pos         int       // stored transitions; slot of the next write
	rng            *rand.Rand
}

// New returns an empty buffer whose sampling is seeded with seed.
func New(obsDim, actDim, capacity int, seed int64) (*Replay, error) {
	if obsDim <= 0 || actDim <= 0 || capacity <= 0 {
		return nil, fmt.Errorf("buffer: replay: invalid sizes obs %d act %d capacity %d", obsDim, actDim, capacity)
	}
	return &Replay{ObsDim: obsDim, ActDim: actDim, Cap: capacity,
		obs: make([]float32, capacity*obsDim), act: make([]float32, capacity*actDim),
		next: make([]float32, capacity*obsDim), rew: make([]float32, capacity),
		terminal: make([]bool, capacity), end: make([]bool, capacity),
		rng: rand.New(rand.NewSource(seed))}, nil
}

// SetRand makes the buffer sample with rng (a run restored from a
// checkpoint gives its buffers views of their restored random sources).
func (r *Replay) SetRand(rng *rand.Rand) { r.rng = rng }

// Len is the number of stored transitions.
func (r *Replay) Len() int { return r.n }

// Add stores one transition. terminal marks an environment termination (the
// critic target does not bootstrap from nextObs); timeout marks an episode cut
// without termination. Either ends the episode for sequence sampling.
func (r *Replay) Add(obs, act []float32, rew float32, nextObs []float32, terminal, timeout bool) error {
	if len(obs) != r.ObsDim || len(nextObs) != r.ObsDim || len(act) != r.ActDim {
		return fmt.Errorf("buffer: replay: add got obs %d act %d next %d values, want %d/%d/%d",
			len(obs), len(act), len(nextObs), r.ObsDim, r.ActDim, r.ObsDim)
	}
	i := r.pos
	copy(r.obs[i*r.ObsDim:(i+1)*r.ObsDim], obs)
	copy(r.act[i*r.ActDim:(i+1)*r.ActDim], act)
	copy(r.next[i*r.ObsDim:(i+1)*r.ObsDim], nextObs)
	r.rew[i], r.terminal[i], r.end[i] = rew, terminal, terminal || timeout
	r.pos = (r.pos + 1) % r.Cap
	if r.n < r.Cap {
		r.n++
	}
	return nil
}

// EndEpisode marks the newest transition as an episode's end (a time-limit
// cut, unless it is already an end): the next one added starts a new
// episode. A run whose environment cannot be restored (a remote one) calls
// it on resume. Nothing happens in an empty buffer.
func (r *Replay) EndEpisode() {
	if r.n > 0 {
		r.end[r.slot(r.n-1)] = true
	}
}

// Transition is one stored transition; its slices alias the buffer.
type Transition struct {
	Obs, Act, NextObs []float32
	Rew               float32
	Terminal, Timeout bool
}

// At returns the transition at logical index k (0 = oldest stored
// transition, Len()-1 = newest); k must be in [0, Len()).
func (r *Replay) At(k int) Transition {
	i, od, ad := r.slot(k), r.ObsDim, r.ActDim
	return Transition{Obs: r.obs[i*od : (i+1)*od], Act: r.act[i*ad : (i+1)*ad], NextObs: r.next[i*od : (i+1)*od],
		Rew: r.rew[i], Terminal: r.terminal[i], Timeout: r.end[i] && !r.terminal[i]}
}

// slot maps a logical index (0 = oldest stored transition) to its ring slot.
func (r *Replay) slot(k int) int { return (r.pos - r.n + k + r.Cap) % r.Cap }

// Batch is a preallocated batch of transitions, rows in row-major layout.
type Batch struct {
	N, ObsDim, ActDim int
	Obs, Act, NextObs []float32 // [N·ObsDim], [N·ActDim], [N·ObsDim]
	Rew               []float32 // [N]
	Terminal          []float32 // [N]: 1 if the environment terminated, else 0
}

// NewBatch allocates a batch of n rows.
func NewBatch(n, obsDim, actDim int) *Batch {
	return &Batch{N: n, ObsDim: obsDim, ActDim: actDim,
		Obs: make([]float32, n*obsDim), Act: make([]float32, n*actDim), NextObs: make([]float32, n*obsDim),
		Rew: make([]float32, n), Terminal: make([]float32, n)}
}

// Sample fills every row of b with transitions drawn uniformly with
// replacement.
func (r *Replay) Sample(b *Batch) error { return r.SampleRows(b, 0, b.N) }

// SampleRows fills rows [from, from+count) of b with uniformly drawn
// transitions, so one batch can mix several buffers (e.g. real and model
// data).
func (r *Replay) SampleRows(b *Batch, from, count int) error {
	if b.ObsDim != r.ObsDim || b.ActDim != r.ActDim {
		return fmt.Errorf("buffer: replay: batch dims %d/%d, buffer %d/%d", b.ObsDim, b.ActDim, r.ObsDim, r.ActDim)
	}
	if from < 0 || count < 0 || from+count > b.N {
		return fmt.Errorf("buffer: replay: rows [%d,%d) outside a batch of %d", from, from+count, b.N)
	}
	if r.n == 0 {
		return fmt.Errorf("buffer: replay: sampling from an empty buffer")
	}
	od, ad := r.ObsDim, r.ActDim
	for row := from; row < from+count; row++ {
		i := r.slot(r.rng.Intn(r.n))
		copy(b.Obs[row*od:(row+1)*od], r.obs[i*od:(i+1)*od])
		copy(b.NextObs[row*od:(row+1)*od], r.next[i*od:(i+1)*od])
		copy(b.Act[row*ad:(row+1)*ad], r.act[i*ad:(i+1)*ad])
		b.Rew[row] = r.rew[i]
		b.Terminal[row] = 0
		if r.terminal[i] {
			b.Terminal[row] = 1
		}
	}
	return nil
}

// SeqBatch is a batch of action sequences from real episodes, for training
// an any-step dynamics model. Row i starts at a stored transition t with
// observation Obs0 and holds, for step k = 1..M, the action a_{t+k-1}, the
// observation reached after it (NextObs, i.e. s_{t+k}) and its reward
// r_{t+k-1}. Steps past the episode's end (or past the newest transition)
// have Mask 0 and zero data; Len is the number of valid steps (≥ 1).
type SeqBatch struct {
	N, M, ObsDim, ActDim int
	Obs0                 []float32 // [N·ObsDim]
	Act                  []float32 // [N·M·ActDim]
	NextObs              []float32 // [N·M·ObsDim]
	Rew                  []float32 // [N·M]
	Mask                 []float32 // [N·M]: 1 for valid steps
	Len                  []int     // [N]
}

// NewSeqBatch allocates a sequence batch of n rows and at most m steps.
func NewSeqBatch(n, m, obsDim, actDim int) *SeqBatch {
	return &SeqBatch{N: n, M: m, ObsDim: obsDim, ActDim: actDim,
		Obs0: make([]float32, n*obsDim), Act: make([]float32, n*m*actDim),
		NextObs: make([]float32, n*m*obsDim), Rew: make([]float32, n*m),
		Mask: make([]float32, n*m), Len: make([]int, n)}
}

// SampleSequencesInto fills every row of a preallocated b with the
// sequences of uniformly drawn start transitions, of at most b.M steps
// each, never crossing an episode end.
func (r *Replay) SampleSequencesInto(b *SeqBatch) error {
	if r.n == 0 {
		return fmt.Errorf("buffer: replay: sampling sequences from an empty buffer")
	}
	for row := 0; row < b.N; row++ {
		if err := r.SequenceAt(r.rng.Intn(r.n), b, row); err != nil {
			return err
		}
	}
	return nil
}

// SequenceAt fills row of b with the sequence starting at logical index k
// (0 = oldest stored transition, Len()-1 = newest). Deterministic access lets
// callers split a buffer into training and hold-out starts.
func (r *Replay) SequenceAt(k int, b *SeqBatch, row int) error {
	if b.ObsDim != r.ObsDim || b.ActDim != r.ActDim || b.M <= 0 {
		return fmt.Errorf("buffer: replay: sequence batch dims %d/%d m %d, buffer %d/%d", b.ObsDim, b.ActDim, b.M, r.ObsDim, r.ActDim)
	}
	if k < 0 || k >= r.n || row < 0 || row >= b.N {
		return fmt.Errorf("buffer: replay: sequence start %d of %d, row %d of %d", k, r.n, row, b.N)
	}
	od, ad, m := r.ObsDim, r.ActDim, b.M
	s0 := r.slot(k)
	copy(b.Obs0[row*od:(row+1)*od], r.obs[s0*od:(s0+1)*od])
	length := 0
	for j := 0; j < m; j++ {
		at := row*m + j
		act := b.Act[at*ad : (at+1)*ad]
		next := b.NextObs[at*od : (at+1)*od]
		// Step j continues the sequence while every earlier step was valid,
		// the previous transition did not end its episode and a newer
		// transition is stored.
		valid := length == j && k+j < r.n && (j == 0 || !r.end[r.slot(k+j-1)])
		if !valid {
			clear(act)
			clear(next)
			b.Rew[at], b.Mask[at] = 0, 0
			continue
		}
		i := r.slot(k + j)
		copy(act, r.act[i*ad:(i+1)*ad])
		copy(next, r.next[i*od:(i+1)*od])
		b.Rew[at], b.Mask[at] = r.rew[i], 1
		length++
	}
	b.Len[row] = length
	return nil
}
