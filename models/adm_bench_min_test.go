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

	G "gorgonia.org/gorgonia"
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
	minBenchSteps(t, "ADM", n, a.Params, func() error {
		if err := a.Run(); err != nil {
			return err
		}
		return opt.Step()
	})
}

// minBenchSteps runs 2 warm-up and n timed steps and prints the fastest,
// the 20th percentile and the median in ms; with ADMPO_MINBENCH_HASH set
// also a hash of params' values after the steps, to compare builds bit for
// bit.
func minBenchSteps(t *testing.T, what string, n int, params G.Nodes, step func() error) {
	t.Helper()
	var tot []float64
	for i := -2; i < n; i++ {
		t0 := time.Now()
		if err := step(); err != nil {
			t.Fatal(err)
		}
		if i >= 0 {
			tot = append(tot, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	if os.Getenv("ADMPO_MINBENCH_HASH") != "" {
		h := fnv.New64a()
		for _, p := range params {
			binary.Write(h, binary.LittleEndian, p.Value().Data().([]float32))
		}
		fmt.Printf("%s params after %d steps: fnv64a %x\n", what, n+2, h.Sum64())
	}
	sort.Float64s(tot)
	fmt.Printf("%s step ms: min %.3f p20 %.3f median %.3f (%d steps)\n", what, tot[0], tot[len(tot)/5], tot[len(tot)/2], n)
}

// TestMinBenchADMOneK (ADMPO_MINBENCH_ONEK=N) times N all-k ADM train
// steps and N one-k steps (k drawn uniformly in 1..m from a seeded
// generator, batch windows fixed) interleaved in one process, at the
// reference size (hopper dims, m = 5, 3x200 GRU, 4 ResBlocks, batch 256),
// and prints the fastest and the median of each, the one-k step's per k
// and the ratio of the means.
func TestMinBenchADMOneK(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMPO_MINBENCH_ONEK"))
	if n <= 0 {
		t.Skip("ADMPO_MINBENCH_ONEK unset")
	}
	cfg := DefaultADMConfig(11, 3, 5)
	m, err := NewADM(cfg, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	const batch = 256
	all, err := NewADMTrainGraph(m, batch, ADMDropout, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	data := randomADMBatch(cfg, batch, 2)
	fillADMInputs(all, data)
	ks := make([]*ADMGraph, cfg.M+1)
	for k := 1; k <= cfg.M; k++ {
		if ks[k], err = NewADMTrainGraphK(m, k, batch, ADMDropout, 1); err != nil {
			t.Fatal(err)
		}
		defer ks[k].Close()
		ks[k].ShareDropout(all)
		fillOneK(ks[k], data)
	}
	opt := NewAdam(all.Params, 3e-4)
	draw := rand.New(rand.NewSource(3))
	var tAll, tOne []float64
	perK := make([][]float64, cfg.M+1)
	ms := func(t0 time.Time) float64 { return float64(time.Since(t0).Nanoseconds()) / 1e6 }
	for i := -2; i < n; i++ {
		t0 := time.Now()
		if err := all.Run(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		da := ms(t0)
		k := 1 + draw.Intn(cfg.M)
		t0 = time.Now()
		if err := ks[k].Run(); err != nil {
			t.Fatal(err)
		}
		if err := opt.StepNodes(ks[k].Params); err != nil {
			t.Fatal(err)
		}
		do := ms(t0)
		if i >= 0 {
			tAll, tOne = append(tAll, da), append(tOne, do)
			perK[k] = append(perK[k], do)
		}
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	stats := func(v []float64) (float64, float64, float64) {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[0], s[len(s)/2], mean(s)
	}
	a0, a1, a2 := stats(tAll)
	o0, o1, o2 := stats(tOne)
	fmt.Printf("ADM all-k step ms: min %.3f median %.3f mean %.3f (%d steps)\n", a0, a1, a2, n)
	fmt.Printf("ADM one-k step ms: min %.3f median %.3f mean %.3f (%d steps, k drawn)\n", o0, o1, o2, n)
	// A uniform k's expected step from the per-k figures (the drawn mix
	// and the load of the moment do not weigh in).
	var uMin, uMed float64
	kn := 0
	for k := 1; k <= cfg.M; k++ {
		if len(perK[k]) > 0 {
			k0, k1, _ := stats(perK[k])
			uMin, uMed, kn = uMin+k0, uMed+k1, kn+1
			fmt.Printf("  k=%d: min %.3f median %.3f (%d steps)\n", k, k0, k1, len(perK[k]))
		}
	}
	uMin, uMed = uMin/float64(kn), uMed/float64(kn)
	fmt.Printf("one-k / all-k: mean %.3f, median %.3f; uniform k from per-k minima %.3f (%.3f / %.3f ms), from per-k medians %.3f\n",
		o2/a2, o1/a1, uMin/a0, uMin, a0, uMed/a1)
}
