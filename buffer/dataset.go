package buffer

import (
	"fmt"

	"github.com/admpo/admpo/datasets"
)

// FromDataset copies an offline data set into a new buffer of exactly
// its size, row by row, so sequences follow the data set's episodes. Every
// episode ends at its terminal or timeout flag; a final tail without either
// (a data set cut mid-episode) is marked as a timeout, so no roll-out start
// or ADM training sequence runs past the data.
func FromDataset(d *datasets.Dataset, seed int64) (*Replay, error) {
	if d == nil || d.N <= 0 {
		return nil, fmt.Errorf("buffer: empty data set")
	}
	r, err := New(d.ObsDim, d.ActDim, d.N, seed)
	if err != nil {
		return nil, err
	}
	od, ad := d.ObsDim, d.ActDim
	for i := 0; i < d.N; i++ {
		term, tout := d.Terminal[i], d.Timeout[i]
		if i == d.N-1 && !term {
			tout = true
		}
		if err := r.Add(d.Obs[i*od:(i+1)*od], d.Act[i*ad:(i+1)*ad], d.Rew[i], d.NextObs[i*od:(i+1)*od], term, tout); err != nil {
			return nil, fmt.Errorf("buffer: data set row %d: %w", i, err)
		}
	}
	return r, nil
}

// Dataset copies the first n transitions (0: all) of the buffer in
// insertion order, D4RL layout without infos; a last row that ends no
// episode is flagged as a timeout.
func (r *Replay) Dataset(n int) (*datasets.Dataset, error) {
	if n <= 0 || n > r.Len() {
		n = r.Len()
	}
	if n == 0 {
		return nil, fmt.Errorf("buffer: empty replay buffer")
	}
	od, ad := r.ObsDim, r.ActDim
	d := &datasets.Dataset{ObsDim: od, ActDim: ad, N: n, Meta: map[string]string{},
		Obs: make([]float32, n*od), Act: make([]float32, n*ad), Rew: make([]float32, n),
		NextObs: make([]float32, n*od), Terminal: make([]bool, n), Timeout: make([]bool, n)}
	for k := 0; k < n; k++ {
		i := r.slot(k)
		copy(d.Obs[k*od:], r.obs[i*od:(i+1)*od])
		copy(d.Act[k*ad:], r.act[i*ad:(i+1)*ad])
		copy(d.NextObs[k*od:], r.next[i*od:(i+1)*od])
		d.Rew[k] = r.rew[i]
		d.Terminal[k] = r.terminal[i]
		d.Timeout[k] = r.end[i] && !r.terminal[i]
	}
	if !d.Terminal[n-1] {
		d.Timeout[n-1] = true
	}
	return d, nil
}
