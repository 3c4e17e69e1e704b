package sac

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"testing"

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
	var f *ckpt.File
	if path := os.Getenv("ADMPO_MINBENCH_SAC_CKPT"); path != "" {
		var err error
		if f, err = ckpt.Load(path); err != nil {
			t.Fatal(err)
		}
	}
	s, b, err := newBenchAgent(f, 11, 3, DefaultConfig(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ph, _, err := s.timeUpdates(b, 5, n)
	if err != nil {
		t.Fatal(err)
	}
	tot := ph[4]
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
