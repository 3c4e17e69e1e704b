package dynamics

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestHoldoutValidationWithDropout: with dropout on, the fit's holdout
// per-k MSE is that of the exported graph run by ONNX Runtime with the
// same masks (infer.DropoutKeep keyed by the seed, the start index and k),
// a second implementation of the masked head; and it differs from the
// validation without dropout.
func TestHoldoutValidationWithDropout(t *testing.T) {
	if err := infer.Init(); err != nil {
		if errors.Is(err, infer.ErrORTMissing) {
			t.Skipf("ONNX Runtime not installed: %v", err)
		}
		t.Fatal(err)
	}
	const M, p, seed = 3, 0.1, 77
	rng := rand.New(rand.NewSource(3))
	data := linearReplay(t, newLinearSystem(0.9, rng), 10, 20, rng)
	cfg := models.ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 2, M: M}
	m, err := models.NewADM(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := fitNormalizer(data, &m.Norm); err != nil {
		t.Fatal(err)
	}
	split, err := newADMSplit(data, M, 0.25, 40)
	if err != nil {
		t.Fatal(err)
	}
	starts := seqRange(split.nTrain, split.nTrain+split.nHold)
	drop := &evalDropout{p: p, seed: seed}
	ev, err := evaluateADM(m, split, starts, 16, false, false, nil, drop) // chunks of 16 rows
	if err != nil {
		t.Fatal(err)
	}
	plain, err := evaluateADM(m, split, starts, 16, false, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	b, err := onnx.ExportADM(m, onnx.ADMOptions{Form: onnx.ADMUnrolled, Dropout: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := infer.OpenADMDirect(b, infer.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	n, od, ad, H, B := len(starts), cfg.ObsDim, cfg.ActDim, cfg.Hidden, cfg.ResBlocks
	sb := buffer.NewSeqBatch(n, M, od, ad)
	if err := split.fill(sb, starts, false); err != nil {
		t.Fatal(err)
	}
	acts := make([]float32, M*n*ad) // [M, n, ad]
	for r := 0; r < n; r++ {
		for j := 0; j < M; j++ {
			copy(acts[(j*n+r)*ad:(j*n+r+1)*ad], sb.Act[(r*M+j)*ad:(r*M+j+1)*ad])
		}
	}
	keep := make([]float32, B*H)
	for k := 1; k <= M; k++ {
		lens := make([]int32, n)
		mask := make([]float32, B*n*H)
		for r := range lens {
			lens[r] = int32(k)
			infer.DropoutKeep(seed, 0, starts[r], k, p, keep)
			for bl := 0; bl < B; bl++ {
				copy(mask[(bl*n+r)*H:(bl*n+r+1)*H], keep[bl*H:(bl+1)*H])
			}
		}
		next := make([]float32, n*od)
		rew := make([]float32, n)
		lv := make([]float32, n*(od+1))
		if err := eng.PredictDropout(sb.Obs0, acts, lens, mask, next, rew, lv); err != nil {
			t.Fatal(err)
		}
		var sum, cnt float64
		for r := 0; r < n; r++ {
			if sb.Mask[r*M+k-1] == 0 {
				continue
			}
			var se float64
			for j := 0; j < od; j++ {
				e := float64(next[r*od+j]) - float64(sb.NextObs[(r*M+k-1)*od+j])
				se += e * e
			}
			e := float64(rew[r]) - float64(sb.Rew[r*M+k-1])
			se += e * e
			sum += se / float64(od+1)
			cnt++
		}
		if cnt == 0 || ev.count[k-1] != cnt {
			t.Fatalf("k=%d: %v holdout pairs, the reference %v", k, ev.count[k-1], cnt)
		}
		got, want := ev.mse[k-1]/ev.count[k-1], sum/cnt
		if math.Abs(got-want) > 1e-4*math.Max(1, want) {
			t.Errorf("k=%d: holdout MSE with dropout %.6g, ONNX Runtime with the same masks %.6g", k, got, want)
		}
		if pl := plain.mse[k-1] / plain.count[k-1]; math.Abs(pl-got) < 1e-6*math.Max(1, got) {
			t.Errorf("k=%d: holdout MSE %.6g with and without dropout", k, got)
		}
	}
}
