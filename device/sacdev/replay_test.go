package sacdev_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev"
)

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// newRandom returns a learner of okConfig with random weights (the same
// for the same seed).
func newRandom(t *testing.T, l *sacdev.Learner, seed int64) {
	t.Helper()
	w, err := l.Weights()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	for _, ps := range [][][]float32{w.Actor, w.Critic1, w.Critic2, w.Target1, w.Target2} {
		for _, p := range ps {
			for i := range p {
				p[i] = float32(0.5 * rng.NormFloat64())
			}
		}
	}
	w.LogAlpha = -1
	if err := l.SetWeights(w); err != nil {
		t.Fatal(err)
	}
}

// TestSampleMatchesUpload: updates on batches gathered on the device by
// index give bit for bit what uploading the same rows gives; an index out
// of range makes the losses NaN.
func TestSampleMatchesUpload(t *testing.T) {
	d := emu.New()
	defer d.Close()
	cfg := okConfig()
	od, ad, b, rows := cfg.ObsDim, cfg.ActDim, cfg.Batch, 40
	rng := rand.New(rand.NewSource(1))
	obs, act, rew, next := randn(rng, rows*od), randn(rng, rows*ad), randn(rng, rows), randn(rng, rows*od)
	term := make([]float32, rows)
	for i := range term {
		term[i] = float32(rng.Intn(2))
	}
	r, err := sacdev.NewReplay(d, od, ad, obs, act, rew, term, next)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	byIndex, err := sacdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	byUpload, err := sacdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	newRandom(t, byIndex, 2)
	newRandom(t, byUpload, 2)
	for u := range 3 {
		idx := make([]int32, b)
		hb := sacdev.Batch{EpsNext: randn(rng, b*ad), Eps: randn(rng, b*ad)}
		for i := range idx {
			j := rng.Intn(rows)
			idx[i] = int32(j)
			hb.Obs = append(hb.Obs, obs[j*od:(j+1)*od]...)
			hb.NextObs = append(hb.NextObs, next[j*od:(j+1)*od]...)
			hb.Act = append(hb.Act, act[j*ad:(j+1)*ad]...)
			hb.Rew, hb.Terminal = append(hb.Rew, rew[j]), append(hb.Terminal, term[j])
		}
		if err := byIndex.Sample(r, idx, hb.EpsNext, hb.Eps); err != nil {
			t.Fatal(err)
		}
		if err := byUpload.Upload(hb); err != nil {
			t.Fatal(err)
		}
		for _, l := range []*sacdev.Learner{byIndex, byUpload} {
			if err := l.Update(); err != nil {
				t.Fatal(err)
			}
		}
		s1, err1 := byIndex.Stats()
		s2, err2 := byUpload.Stats()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if s1 != s2 {
			t.Errorf("update %d: stats by index %+v, by upload %+v", u+1, s1, s2)
		}
	}
	w1, _ := byIndex.Weights()
	w2, _ := byUpload.Weights()
	for i, pair := range [][2][][]float32{{w1.Actor, w2.Actor}, {w1.Critic1, w2.Critic1}, {w1.Target2, w2.Target2}} {
		for j := range pair[0] {
			for k := range pair[0][j] {
				if pair[0][j][k] != pair[1][j][k] {
					t.Fatalf("network %d tensor %d [%d]: %v by index, %v by upload", i, j, k, pair[0][j][k], pair[1][j][k])
				}
			}
		}
	}
	// An index past the replay gives NaN losses.
	idx := make([]int32, b)
	idx[b-1] = int32(rows)
	if err := byIndex.Sample(r, idx, make([]float32, b*ad), make([]float32, b*ad)); err != nil {
		t.Fatal(err)
	}
	if err := byIndex.Update(); err != nil {
		t.Fatal(err)
	}
	if s, err := byIndex.Stats(); err != nil || !math.IsNaN(s.CriticLoss) {
		t.Errorf("with an index past the replay: critic loss %v (err %v), want NaN", s.CriticLoss, err)
	}
}

func TestSampleErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	cfg := okConfig()
	l, err := sacdev.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sacdev.NewReplay(d, 3, 2, make([]float32, 6), make([]float32, 4), make([]float32, 2),
		make([]float32, 2), make([]float32, 5)); err == nil {
		t.Error("NewReplay with short next observations succeeded")
	}
	r, err := sacdev.NewReplay(d, 4, 2, make([]float32, 8), make([]float32, 4), make([]float32, 2),
		make([]float32, 2), make([]float32, 8))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	noise := make([]float32, cfg.Batch*cfg.ActDim)
	if err := l.Sample(r, make([]int32, cfg.Batch), noise, noise); err == nil {
		t.Error("Sample from a replay of other observations succeeded")
	}
	r3, err := sacdev.NewReplay(d, 3, 2, make([]float32, 6), make([]float32, 4), make([]float32, 2),
		make([]float32, 2), make([]float32, 6))
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if err := l.Sample(r3, make([]int32, cfg.Batch-1), noise, noise); err == nil {
		t.Error("Sample with too few indices succeeded")
	}
	if err := l.Sample(r3, make([]int32, cfg.Batch), noise, noise[1:]); err == nil {
		t.Error("Sample with short noise succeeded")
	}
}
