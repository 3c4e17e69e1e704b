package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand"
	"path/filepath"
	"sort"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

func main() {
	data := flag.String("data", "", "D4RL hdf5")
	steps := flag.Int("steps", 2000, "Adam steps")
	every := flag.Int("every", 500, "steps per epoch (holdout check)")
	lr := flag.Float64("lr", 3e-4, "learning rate")
	oneK := flag.Bool("onek", false, "the authors' one-k fit (ADMFitConfig.OneK: one k drawn per Adam step, the GRU unrolled k steps, the head at step k)")
	m := flag.Int("m", 5, "m")
	seed := flag.Int64("seed", 0, "seed")
	dropout := flag.Float64("dropout", 0.1, "dropout")
	ckptPath := flag.String("ckpt", "", "load the ADM from this checkpoint (prefix adm) instead of fitting")
	evalDrop := flag.Float64("evaldrop", 0, "MC dropout probability in the final per-dim analysis")
	top := flag.Int("top", 0, "print the top k=1 errors of dimension topdim")
	topDim := flag.Int("topdim", 10, "dimension for -top")
	noClip := flag.Bool("noclip", false, "leave out holdout starts with a velocity at the clip bound (hopper: dims 5-10)")
	trainStarts := flag.Bool("trainstarts", false, "analyse 1000 random train starts instead of the holdout")
	run := flag.String("run", "", "instead of -data: an online admpo run's directory; its ADM and real buffer at the last\n"+
		"checkpoint, fitted on (warm) for -steps with the run's holdout (the buffer's newest 500 starts)")
	flag.Parse()
	var rb *buffer.Replay
	var mod *models.ADM
	rng := rand.New(rand.NewSource(*seed))
	if *run != "" {
		f, err := ckpt.Load(filepath.Join(*run, "checkpoint.ckpt"))
		if err != nil {
			log.Fatal(err)
		}
		if rb, err = buffer.Load(f, "real"); err != nil {
			log.Fatal(err)
		}
		if mod, err = models.GetADM(f, "adm"); err != nil {
			log.Fatal(err)
		}
		*m = mod.Cfg.M
	} else {
		d, err := datasets.Read(*data)
		if err != nil {
			log.Fatal(err)
		}
		if rb, err = buffer.FromDataset(d, *seed+1); err != nil {
			log.Fatal(err)
		}
		if mod, err = models.NewADM(models.DefaultADMConfig(d.ObsDim, d.ActDim, *m), rng); err != nil {
			log.Fatal(err)
		}
	}
	fc := dynamics.DefaultADMFitConfig()
	if *run != "" {
		fc.MaxHoldout, fc.WarmStart = 500, true
	}
	fc.LR, fc.OneK, fc.Dropout = float32(*lr), *oneK, *dropout
	fc.MaxSteps, fc.MaxTotalSteps, fc.Patience, fc.TrainEval = *every, *steps, 1000, 0
	t0 := time.Now()
	fc.OnEpoch = func(e dynamics.FitEpoch) {
		fmt.Printf("step %6d  %6.0fs  trainNLL %8.4f  holdoutMSE %.5f  perK", e.AdamSteps, time.Since(t0).Seconds(), e.TrainLoss, e.HoldoutLoss)
		for _, v := range e.HoldoutPerK {
			fmt.Printf(" %.5f", v)
		}
		fmt.Println()
	}
	if *ckptPath != "" {
		f, err := ckpt.Load(*ckptPath)
		if err != nil {
			log.Fatal(err)
		}
		if mod, err = models.GetADM(f, "adm"); err != nil {
			log.Fatalf("%v (names %v)", err, f.Names())
		}
		M0 := mod.Cfg.M
		m = &M0
	} else if _, err := dynamics.FitADM(context.Background(), mod, rb, fc, rng); err != nil {
		log.Fatal(err)
	}
	// per-k per-dim holdout error of the last (kept) model, no dropout,
	// and the "no change" baseline (mean squared target).
	n := rb.Len()
	hold := min(int(0.2*float64(n)), 1000)
	od, ad, M := rb.ObsDim, rb.ActDim, *m
	dd := od + 1
	sb := buffer.NewSeqBatch(hold, M, od, ad)
	startIdx := make([]int, hold)
	for i := range startIdx {
		startIdx[i] = n - hold + i
		if *trainStarts {
			startIdx[i] = rng.Intn(n - hold - M)
		}
	}
	for i := 0; i < hold; i++ {
		if err := rb.SequenceAt(startIdx[i], sb, i); err != nil {
			log.Fatal(err)
		}
	}
	if *noClip {
		left := 0
		for r := 0; r < hold; r++ {
			for j := 5; j < od; j++ {
				if v := sb.Obs0[r*od+j]; v >= 9.999 || v <= -9.999 {
					clear(sb.Mask[r*M : (r+1)*M])
					break
				}
			}
			if sb.Mask[r*M] != 0 {
				left++
			}
		}
		fmt.Printf("holdout starts without a clipped velocity: %d of %d\n", left, hold)
	}
	acts := make([][]float32, M)
	mean := make([][]float32, M)
	lv := make([][]float32, M)
	for k := 0; k < M; k++ {
		acts[k] = make([]float32, hold*ad)
		mean[k] = make([]float32, hold*dd)
		lv[k] = make([]float32, hold*dd)
		for r := 0; r < hold; r++ {
			copy(acts[k][r*ad:(r+1)*ad], sb.Act[(r*M+k)*ad:(r*M+k+1)*ad])
		}
	}
	st := mod.NewState(hold)
	st.Reset()
	var mult []float32
	if *evalDrop > 0 {
		mult = make([]float32, mod.Cfg.ResBlocks*hold*mod.Cfg.Hidden)
	}
	for k := 0; k < M; k++ {
		if err := mod.GRUStep(st, sb.Obs0, acts[k]); err != nil {
			log.Fatal(err)
		}
		for i := range mult {
			mult[i] = 0
			if rng.Float64() >= *evalDrop {
				mult[i] = float32(1 / (1 - *evalDrop))
			}
		}
		if err := mod.HeadDropout(st, mult, mean[k], lv[k]); err != nil {
			log.Fatal(err)
		}
	}
	if *top > 0 {
		type e struct {
			r    int
			err  float64
			tgt  float64
			pred float64
		}
		var es []e
		j := *topDim
		for r := 0; r < hold; r++ {
			t := float64(sb.NextObs[(r*M)*od+j] - sb.Obs0[r*od+j])
			p := float64(mean[0][r*dd+j])
			es = append(es, e{r, (p - t) * (p - t), t, p})
		}
		sort.Slice(es, func(a, b int) bool { return es[a].err > es[b].err })
		var tot float64
		for _, x := range es {
			tot += x.err
		}
		var cum float64
		for i, x := range es[:*top] {
			cum += x.err
			tr := rb.At(startIdx[x.r])
			fmt.Printf("top %2d: start %d err %.3f (cum %.0f%%) target %.3f pred %.3f v_t %.3f a %v term %v tout %v len %d\n", i, x.r, x.err, 100*cum/tot, x.tgt, x.pred,
				sb.Obs0[x.r*od+j], tr.Act, tr.Terminal, tr.Timeout, sb.Len[x.r])
			for k := 1; k < M; k++ {
				if sb.Mask[x.r*M+k] == 0 {
					continue
				}
				t := float64(sb.NextObs[(x.r*M+k)*od+j] - sb.Obs0[x.r*od+j])
				fmt.Printf("        k=%d target %.3f pred %.3f\n", k+1, t, mean[k][x.r*dd+j])
			}
		}
	}
	for k := 0; k < M; k++ {
		se := make([]float64, dd)
		z := make([]float64, dd)
		var lvs float64
		cnt := 0.0
		for r := 0; r < hold; r++ {
			if sb.Mask[r*M+k] == 0 {
				continue
			}
			cnt++
			for j := 0; j < dd; j++ {
				var t float64
				if j < od {
					t = float64(sb.NextObs[(r*M+k)*od+j] - sb.Obs0[r*od+j])
				} else {
					t = float64(sb.Rew[r*M+k])
				}
				e := float64(mean[k][r*dd+j]) - t
				se[j] += e * e
				z[j] += t * t
				lvs += float64(lv[k][r*dd+j])
			}
		}
		var tot, ztot float64
		fmt.Printf("k=%d n=%4.0f perdim MSE:", k+1, cnt)
		for j := range se {
			se[j] /= cnt
			z[j] /= cnt
			tot += se[j]
			ztot += z[j]
			fmt.Printf(" %.4f", se[j])
		}
		fmt.Printf("\n     zero-pred MSE :")
		for j := range z {
			fmt.Printf(" %.4f", z[j])
		}
		fmt.Printf("\n     total MSE %.5f (obs only %.5f) zero-pred %.5f mean logvar %.3f stdRMS %.4f\n", tot/float64(dd), (tot-se[od])/float64(od), ztot/float64(dd), lvs/cnt/float64(dd), math.Exp(0.5*lvs/cnt/float64(dd)))
	}
}
