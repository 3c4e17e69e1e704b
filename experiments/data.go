package experiments

import (
	"fmt"
	"math/rand"
	"sort"

	"github.com/admpo/admpo/datasets"
)

// Split divides a data set's episodes into training episodes (for model
// fitting) and held-out test episodes (for open-loop evaluation).
type Split struct {
	Train *datasets.Dataset // the training episodes, in their original order
	Test  []datasets.Episode
	Data  *datasets.Dataset // the whole data set (Test indexes into it)
}

// SplitEpisodes holds out episodes of at least minLen transitions, drawn
// at random (seeded) until they hold testFrac of the transitions, and
// returns the remaining episodes as a training data set.
func SplitEpisodes(d *datasets.Dataset, testFrac float64, minLen int, seed int64) (*Split, error) {
	if testFrac <= 0 || testFrac >= 1 {
		return nil, fmt.Errorf("experiments: test fraction %v must be in (0, 1)", testFrac)
	}
	eps := d.Episodes()
	var long []int
	for i, e := range eps {
		if e.Len() >= minLen {
			long = append(long, i)
		}
	}
	if len(long) == 0 {
		return nil, fmt.Errorf("experiments: no episode has %d transitions (longest: %d)", minLen, longest(eps))
	}
	rng := rand.New(rand.NewSource(seed))
	rng.Shuffle(len(long), func(i, j int) { long[i], long[j] = long[j], long[i] })
	held := map[int]bool{}
	n := 0
	for _, i := range long {
		if float64(n) >= testFrac*float64(d.N) {
			break
		}
		if len(held) == len(eps)-1 {
			break // keep at least one training episode
		}
		held[i] = true
		n += eps[i].Len()
	}
	s := &Split{Data: d}
	var keep []datasets.Episode
	for i, e := range eps {
		if held[i] {
			s.Test = append(s.Test, e)
		} else {
			keep = append(keep, e)
		}
	}
	sort.Slice(s.Test, func(i, j int) bool { return s.Test[i].Start < s.Test[j].Start })
	s.Train = subset(d, keep)
	return s, nil
}

func longest(eps []datasets.Episode) int {
	n := 0
	for _, e := range eps {
		n = max(n, e.Len())
	}
	return n
}

// subset copies the given episodes' rows into a new data set; an episode
// without an end flag gets a timeout so none runs into the next.
func subset(d *datasets.Dataset, eps []datasets.Episode) *datasets.Dataset {
	od, ad := d.ObsDim, d.ActDim
	out := &datasets.Dataset{ObsDim: od, ActDim: ad, Meta: d.Meta}
	for _, e := range eps {
		out.Obs = append(out.Obs, d.Obs[e.Start*od:e.End*od]...)
		out.NextObs = append(out.NextObs, d.NextObs[e.Start*od:e.End*od]...)
		out.Act = append(out.Act, d.Act[e.Start*ad:e.End*ad]...)
		out.Rew = append(out.Rew, d.Rew[e.Start:e.End]...)
		out.Terminal = append(out.Terminal, d.Terminal[e.Start:e.End]...)
		tout := append([]bool(nil), d.Timeout[e.Start:e.End]...)
		if !d.Terminal[e.End-1] {
			tout[len(tout)-1] = true
		}
		out.Timeout = append(out.Timeout, tout...)
		out.N += e.Len()
	}
	return out
}

// Segments cuts open-loop segments from the episodes: starts every stride
// transitions from each episode's beginning, each with up to hist real
// states before the start and horizon recorded steps after it (episodes
// too short for a start give none). At most max segments are kept, drawn
// at random (seeded) when there are more.
func Segments(d *datasets.Dataset, eps []datasets.Episode, hist, horizon, stride, maxSegs int, seed int64) []Segment {
	od, ad := d.ObsDim, d.ActDim
	var segs []Segment
	for _, e := range eps {
		// state t of the episode: Obs[Start+t] for t < Len, NextObs[End-1] for t = Len.
		state := func(t int) []float32 {
			if t < e.Len() {
				return d.Obs[(e.Start+t)*od : (e.Start+t+1)*od]
			}
			return d.NextObs[(e.End-1)*od : e.End*od]
		}
		act := func(t int) []float32 { return d.Act[(e.Start+t)*ad : (e.Start+t+1)*ad] }
		for s0 := 0; s0+horizon <= e.Len(); s0 += max(stride, 1) {
			h := min(hist, s0)
			seg := Segment{Hist: h}
			for t := s0 - h; t <= s0+horizon; t++ {
				seg.States = append(seg.States, state(t))
				if t < s0+horizon {
					seg.Acts = append(seg.Acts, act(t))
				}
			}
			segs = append(segs, seg)
		}
	}
	if maxSegs > 0 && len(segs) > maxSegs {
		rng := rand.New(rand.NewSource(seed))
		rng.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		segs = segs[:maxSegs]
	}
	return segs
}
