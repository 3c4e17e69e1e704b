package train

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestMeasureUADMDropout is a measurement, not a check: it runs only when
// ADMPO_UDROPOUT_DATA names a hopper D4RL file (docs/fidelity.md, "MC
// dropout: how much U^ADM changes"). It fits one ADM of the paper's
// hopper-medium-replay size (m 5, 3x200 GRU, 4 ResBlocks, holdout
// validated with dropout) for at most ADMPO_UDROPOUT_EPOCHS epochs
// (default 10), rolls the actor in ADMPO_UDROPOUT_POLICY (an actor ONNX
// file; default a fresh 256x256 SAC actor, ADMPO-OFF's first roll-out
// policy) out for H = 5 steps from 5000 full-history starts of the data, with
// the roll-out graph without and with MC dropout (p 0.1), and prints the mean
// U^ADM of both, at the first step and over all steps, with their ratio.
func TestMeasureUADMDropout(t *testing.T) {
	path := os.Getenv("ADMPO_UDROPOUT_DATA")
	if path == "" {
		t.Skip("set ADMPO_UDROPOUT_DATA to a hopper D4RL file to measure U^ADM with and without MC dropout")
	}
	epochs := 10
	if v := os.Getenv("ADMPO_UDROPOUT_EPOCHS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ADMPO_UDROPOUT_EPOCHS=%q is not a positive integer", v)
		}
		epochs = n
	}
	task, err := envs.Lookup("hopper")
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadOfflineDataset(path, task.ObsDim, task.ActDim)
	if err != nil {
		t.Fatal(err)
	}
	data, err := buffer.FromDataset(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := OfflinePreset("paper", "hopper", "medium-replay", "admpo", task.ActDim)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelMaxEpochs = epochs
	dyn, err := dynamics.NewADM(cfg.dynamicsConfig(), task.ObsDim, task.ActDim)
	if err != nil {
		t.Fatal(err)
	}
	adm := dyn.(*dynamics.ADM)
	rng := rand.New(rand.NewSource(0))
	t0 := time.Now()
	rep, err := dynamics.FitADM(context.Background(), adm.Model, data, adm.FitCfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("data %s: %d transitions; ADM m %d, %dx%d GRU, %d ResBlocks; fit %d epochs (cap %d, holdout dropout %v) in %s, holdout MSE %.4g\n",
		path, d.N, adm.Model.Cfg.M, adm.Model.Cfg.Layers, adm.Model.Cfg.Hidden, adm.Model.Cfg.ResBlocks, rep.Epochs, epochs,
		adm.FitCfg.HoldoutDropout, time.Since(t0).Round(time.Second), rep.HoldoutLoss)

	var actor []byte
	if p := os.Getenv("ADMPO_UDROPOUT_POLICY"); p != "" {
		if actor, err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	} else {
		lo, hi := make([]float64, task.ActDim), make([]float64, task.ActDim)
		for j := range lo {
			lo[j], hi[j] = -1, 1 // hopper's action bounds
		}
		a := models.NewActor(task.ObsDim, lo, hi, []int{256, 256}, rand.New(rand.NewSource(0)))
		if actor, err = onnx.ExportActor(a, nil); err != nil {
			t.Fatal(err)
		}
	}
	opts := infer.Options{Threads: 1, Workers: 1}
	pol, err := infer.OpenPolicy(actor, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	starts, err := data.SampleFullStarts(5000, adm.Model.Cfg.M, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	rc := infer.RollConfig{Horizon: cfg.Horizon, WantU: true, Done: task.Done}
	var first, all [2]float64
	for i, p := range []float64{0, models.ADMDropout} {
		b, err := onnx.ExportADM(adm.Model, onnx.ADMOptions{Form: onnx.ADMPacked, Dropout: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := infer.OpenADMDirect(b, opts)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := eng.Rollout(pol, starts, rc, rand.New(rand.NewSource(2)))
		eng.Close()
		if err != nil {
			t.Fatal(err)
		}
		var s0, n0, s, n float64
		for j := 0; j < tr.N; j++ {
			u := float64(tr.Uncertainty[j])
			s, n = s+u, n+1
			if tr.Step[j] == 0 {
				s0, n0 = s0+u, n0+1
			}
		}
		first[i], all[i] = s0/n0, s/n
		fmt.Printf("dropout %.1f: %d transitions, mean U^ADM at step 0 %.5g (%d starts), over all %d steps %.5g\n",
			p, tr.N, first[i], int(n0), rc.Horizon, all[i])
	}
	fmt.Printf("mean U^ADM with / without dropout: step 0 %.3fx, all steps %.3fx\n", first[1]/first[0], all[1]/all[0])
}
