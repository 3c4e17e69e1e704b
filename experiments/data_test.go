package experiments

import (
	"testing"

	"github.com/admpo/admpo/datasets"
)

// handData builds episodes of the given lengths with obs_t = [100e + t],
// act_t = [-(100e + t)], next = obs_{t+1}; the last episode has no end flag.
func handData(lens []int) *datasets.Dataset {
	d := &datasets.Dataset{ObsDim: 1, ActDim: 1}
	for e, n := range lens {
		for t := 0; t < n; t++ {
			v := float32(100*e + t)
			d.Obs = append(d.Obs, v)
			d.NextObs = append(d.NextObs, v+1)
			d.Act = append(d.Act, -v)
			d.Rew = append(d.Rew, 0)
			last := t == n-1 && e < len(lens)-1
			d.Terminal = append(d.Terminal, last && e%2 == 0)
			d.Timeout = append(d.Timeout, last && e%2 == 1)
			d.N++
		}
	}
	return d
}

func TestSegmentsLayout(t *testing.T) {
	d := handData([]int{12, 3, 9})
	eps := d.Episodes()
	segs := Segments(d, eps, 2, 5, 4, 0, 0)
	// Episode 0 (12 steps): starts 0, 4 (8+5 > 12 stops); episode 1: none;
	// episode 2 (9 steps): starts 0, 4.
	want := []struct{ base, s0, hist int }{{0, 0, 0}, {0, 4, 2}, {200, 0, 0}, {200, 4, 2}}
	if len(segs) != len(want) {
		t.Fatalf("%d segments, want %d", len(segs), len(want))
	}
	for i, w := range want {
		s := segs[i]
		if s.Hist != w.hist || s.Steps() != 5 || len(s.Acts) != len(s.States)-1 {
			t.Fatalf("segment %d: hist %d, steps %d, %d states / %d actions", i, s.Hist, s.Steps(), len(s.States), len(s.Acts))
		}
		for j, st := range s.States {
			if v := float32(w.base + w.s0 - w.hist + j); st[0] != v {
				t.Fatalf("segment %d state %d = %v, want %v", i, j, st[0], v)
			}
		}
		for j, a := range s.Acts {
			if v := -float32(w.base + w.s0 - w.hist + j); a[0] != v {
				t.Fatalf("segment %d action %d = %v, want %v", i, j, a[0], v)
			}
		}
	}
	// The last state of a segment ending at its episode's end comes from
	// next_observations: episode 2 from start 4 ends at state 9 = 209.
	if got := segs[3].States[len(segs[3].States)-1][0]; got != 209 {
		t.Errorf("last state %v, want 209", got)
	}
	if n := len(Segments(d, eps, 2, 5, 4, 3, 1)); n != 3 {
		t.Errorf("capped segments: %d, want 3", n)
	}
}

func TestSplitEpisodes(t *testing.T) {
	d := handData([]int{30, 5, 40, 8, 35, 20, 50})
	s, err := SplitEpisodes(d, 0.2, 25, 3)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, e := range s.Test {
		if e.Len() < 25 {
			t.Errorf("held-out episode %v is shorter than 25", e)
		}
		held += e.Len()
	}
	if float64(held) < 0.2*float64(d.N) || s.Train.N+held != d.N {
		t.Errorf("held out %d of %d transitions, train %d", held, d.N, s.Train.N)
	}
	// Training episodes keep their rows and end flags; no held-out row is in them.
	if err := s.Train.Validate(1, 1); err != nil {
		t.Fatal(err)
	}
	in := map[float32]bool{}
	for _, v := range s.Train.Obs {
		in[v] = true
	}
	for _, e := range s.Test {
		if in[d.Obs[e.Start]] {
			t.Errorf("held-out episode starting at %v is also in the training data", d.Obs[e.Start])
		}
	}
	trainEps := s.Train.Episodes()
	if len(trainEps)+len(s.Test) != 7 {
		t.Errorf("%d training + %d held-out episodes, want 7", len(trainEps), len(s.Test))
	}
	for _, e := range trainEps {
		if !e.Terminal && !e.Timeout {
			t.Errorf("training episode %v has no end flag", e)
		}
	}
}
