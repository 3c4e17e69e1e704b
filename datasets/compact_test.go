package datasets

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/bitexact"
)

// chainDataset makes n rows of episodes of random lengths where each row's
// next observation is the next row's observation inside an episode, as a
// replay buffer holds them.
func chainDataset(n, od, ad int, seed int64) *Dataset {
	rng := rand.New(rand.NewSource(seed))
	d := &Dataset{N: n, ObsDim: od, ActDim: ad, Obs: make([]float32, n*od), NextObs: make([]float32, n*od),
		Act: make([]float32, n*ad), Rew: make([]float32, n), Terminal: make([]bool, n), Timeout: make([]bool, n)}
	next := func() []float32 {
		v := make([]float32, od)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		return v
	}
	cur := next()
	for i := 0; i < n; i++ {
		copy(d.Obs[i*od:], cur)
		nx := next()
		copy(d.NextObs[i*od:], nx)
		for j := 0; j < ad; j++ {
			d.Act[i*ad+j] = float32(rng.Float64()*2 - 1)
		}
		d.Rew[i] = float32(rng.NormFloat64())
		switch r := rng.Intn(40); {
		case r == 0:
			d.Terminal[i] = true
		case r == 1:
			d.Timeout[i] = true
		}
		cur = nx
		if d.Terminal[i] || d.Timeout[i] {
			cur = next() // a reset
		}
	}
	return d
}

// TestCompactRoundTrip: every array comes back bit for bit (compared with
// the data set written), and a data set whose next observation breaks an
// episode is refused.
func TestCompactRoundTrip(t *testing.T) {
	d := chainDataset(3001, 5, 2, 1)
	var buf bytes.Buffer
	if err := WriteCompact(&buf, d); err != nil {
		t.Fatal(err)
	}
	r, err := ReadCompact(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r.N != d.N || r.ObsDim != d.ObsDim || r.ActDim != d.ActDim {
		t.Fatalf("read N %d obs %d act %d", r.N, r.ObsDim, r.ActDim)
	}
	bitexact.Same(t, "observations", r.Obs, d.Obs)
	bitexact.Same(t, "next_observations", r.NextObs, d.NextObs)
	bitexact.Same(t, "actions", r.Act, d.Act)
	bitexact.Same(t, "rewards", r.Rew, d.Rew)
	for i := range d.Terminal {
		if d.Terminal[i] != r.Terminal[i] || d.Timeout[i] != r.Timeout[i] {
			t.Fatalf("row %d flags differ", i)
		}
	}
	raw := 4 * d.N * (2*d.ObsDim + d.ActDim + 1)
	if buf.Len() > raw*3/4 {
		t.Fatalf("compact file %d bytes, raw %d: next observations not left out", buf.Len(), raw)
	}
	if _, err := ReadCompact(bytes.NewReader(buf.Bytes()[:buf.Len()/2])); err == nil {
		t.Fatal("a truncated file was read")
	}
	d.Terminal[7], d.Timeout[7] = false, false
	d.NextObs[7*d.ObsDim] = d.Obs[8*d.ObsDim] + 1 // row 7 no longer leads to row 8
	wantErr(t, WriteCompact(&bytes.Buffer{}, d), "row 7", "inside an episode")
}
