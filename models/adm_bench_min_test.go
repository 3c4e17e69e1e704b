package models

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
)

// TestMinBenchADMTrainStep (ADMPO_MINBENCH_ADM=N) times N ADM train
// steps (as BenchmarkADMTrainStep) and prints the fastest, the 20th
// percentile and the median; with ADMPO_MINBENCH_HASH set also a hash of
// the parameters after the steps, to compare builds bit for bit.
func TestMinBenchADMTrainStep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMPO_MINBENCH_ADM"))
	if n <= 0 {
		t.Skip("ADMPO_MINBENCH_ADM unset")
	}
	cfg := DefaultADMConfig(11, 3, 5)
	m, err := NewADM(cfg, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	const batch = 256
	a, err := NewADMTrainGraph(m, batch, ADMDropout, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fillADMInputs(a, randomADMBatch(cfg, batch, 2))
	opt := NewAdam(a.Params, 3e-4)
	var tot []float64
	for i := -2; i < n; i++ {
		t0 := time.Now()
		if err := a.Run(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if i >= 0 {
			tot = append(tot, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	if os.Getenv("ADMPO_MINBENCH_HASH") != "" {
		h := fnv.New64a()
		for _, p := range a.Params {
			binary.Write(h, binary.LittleEndian, p.Value().Data().([]float32))
		}
		fmt.Printf("ADM params after %d steps: fnv64a %x\n", n+2, h.Sum64())
	}
	sort.Float64s(tot)
	fmt.Printf("ADM step ms: min %.3f p20 %.3f median %.3f (%d steps)\n", tot[0], tot[len(tot)/5], tot[len(tot)/2], n)
}
