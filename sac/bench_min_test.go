package sac

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// TestMinBenchSACUpdate (ADMPO_MINBENCH_SAC=N) times N SAC updates at
// Hopper's sizes (as BenchUpdate) and prints the fastest, the 20th
// percentile and the median: the fastest is what a loaded machine spoils
// least. With ADMPO_MINBENCH_HASH set it also prints a hash of every
// network's weights after the updates, to compare builds bit for bit.
// With ADMPO_MINBENCH_SAC_CKPT naming a training run's checkpoint.ckpt
// (hopper), the updates start from its networks and optimiser state: a
// trained agent's state (e.g. Adam moments of dead ReLU units decaying
// towards zero) costs otherwise than a fresh one's.
// Run with GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 for one thread.
func TestMinBenchSACUpdate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMPO_MINBENCH_SAC"))
	if n <= 0 {
		t.Skip("ADMPO_MINBENCH_SAC unset")
	}
	const obsDim, actDim = 11, 3
	cfg := DefaultConfig(actDim)
	s, err := New(obsDim, []float64{-1, -1, -1}, []float64{1, 1, 1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if path := os.Getenv("ADMPO_MINBENCH_SAC_CKPT"); path != "" {
		f, err := ckpt.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Load(f); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(7))
	b := buffer.NewBatch(cfg.BatchSize, obsDim, actDim)
	for _, v := range [][]float32{b.Obs, b.NextObs, b.Rew} {
		fillNormal(v, rng)
	}
	for i := range b.Act {
		b.Act[i] = float32(2*rng.Float64() - 1)
	}
	var tot []float64
	for i := -5; i < n; i++ {
		var st Stats
		fillNormal(s.targetG.Eps.Data, s.rng)
		fillNormal(s.actorG.Eps.Data, s.rng)
		t0 := time.Now()
		alpha := s.Alpha()
		if err := s.computeTarget(b, alpha); err != nil {
			t.Fatal(err)
		}
		if err := s.updateCritic(b, &st); err != nil {
			t.Fatal(err)
		}
		logp, err := s.updateActor(b, alpha, &st)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.updateAlpha(logp, &st); err != nil {
			t.Fatal(err)
		}
		s.updateTargets()
		s.Updates++
		if i >= 0 {
			tot = append(tot, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	if os.Getenv("ADMPO_MINBENCH_HASH") != "" {
		h := fnv.New64a()
		for _, m := range []*models.MLP{&s.Actor.Net, &s.Critic1.Net, &s.Critic2.Net, &s.Target1.Net, &s.Target2.Net} {
			for _, l := range m.Layers {
				binary.Write(h, binary.LittleEndian, l.W)
				binary.Write(h, binary.LittleEndian, l.B)
			}
		}
		fmt.Printf("SAC weights after %d updates: fnv64a %x\n", n+5, h.Sum64())
	}
	sort.Float64s(tot)
	fmt.Printf("SAC update ms: min %.3f p20 %.3f median %.3f (%d updates)\n", tot[0], tot[len(tot)/5], tot[len(tot)/2], n)
}
