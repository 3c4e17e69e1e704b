package experiments

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/models"
)

// randADMHistory draws from seed an ADM of cfg and a window of rows rows
// of random lengths, states and actions for it.
func randADMHistory(t *testing.T, seed int64, cfg models.ADMConfig, rows int) (*models.ADM, *window.Window) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	adm, err := models.NewADM(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	m, od, ad := cfg.M, cfg.ObsDim, cfg.ActDim
	h := window.New(rows, m, od, ad)
	for r := 0; r < rows; r++ {
		h.Len[r] = 1 + rng.Intn(m)
	}
	for i := range h.S {
		h.S[i] = float32(rng.NormFloat64())
	}
	for i := range h.A {
		h.A[i] = float32(2*rng.Float64() - 1)
	}
	return adm, h
}

// TestADMPredictKMatchesPerRowUnroll checks the batched backtracking
// prediction against unrolling the ADM row by row from the state k-1 steps
// back with the window's actions, written out by index here.
func TestADMPredictKMatchesPerRowUnroll(t *testing.T) {
	const od, ad, m = 4, 2, 4
	adm, h := randADMHistory(t, 5, models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: 16, Layers: 2, ResBlocks: 1, M: m}, 9)
	var st *models.ADMState
	for k := 1; k <= m; k++ {
		var rows []int
		for r := range h.Len {
			if h.Len[r] >= k {
				rows = append(rows, r)
			}
		}
		got := make([]float32, len(rows)*od)
		if err := admPredictK(adm, &st, h, rows, k, got, nil); err != nil {
			t.Fatal(err)
		}
		for q, r := range rows {
			l := h.Len[r]
			start := h.S[(r*m+l-k)*od : (r*m+l-k+1)*od]
			acts := make([][]float32, k)
			mean := make([][]float32, k)
			lv := make([][]float32, k)
			for j := 0; j < k; j++ {
				acts[j] = h.A[(r*m+l-k+j)*ad : (r*m+l-k+j+1)*ad]
				mean[j], lv[j] = make([]float32, od+1), make([]float32, od+1)
			}
			if _, err := adm.PredictAll(nil, 1, start, acts, mean, lv); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < od; i++ {
				want := start[i] + mean[k-1][i]
				if math.Abs(float64(got[q*od+i]-want)) > 1e-5 {
					t.Fatalf("k=%d row %d dim %d: %v, per-row unroll %v", k, r, i, got[q*od+i], want)
				}
			}
		}
	}
}

// TestRNNPredictMatchesPerRowSteps checks the bootstrapping RNN's batched,
// length-grouped prediction against stepping each row's GRU alone over its
// window's states and actions.
func TestRNNPredictMatchesPerRowSteps(t *testing.T) {
	const od, ad, m = 3, 2, 3
	adm, h := randADMHistory(t, 6, models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: 12, Layers: 1, ResBlocks: 2, M: m}, 11)
	rows := []int{0, 2, 3, 5, 6, 7, 10}
	got := make([]float32, len(rows)*od)
	if err := rnnPredict(adm, h, rows, got); err != nil {
		t.Fatal(err)
	}
	for q, r := range rows {
		st := adm.NewState(1)
		for j := 0; j < h.Len[r]; j++ {
			if err := adm.GRUStep(st, h.S[(r*m+j)*od:(r*m+j+1)*od], h.A[(r*m+j)*ad:(r*m+j+1)*ad]); err != nil {
				t.Fatal(err)
			}
		}
		mean, lv := make([]float32, od+1), make([]float32, od+1)
		if err := adm.Head(st, mean, lv); err != nil {
			t.Fatal(err)
		}
		cur := h.S[(r*m+h.Len[r]-1)*od:]
		for i := 0; i < od; i++ {
			if want := cur[i] + mean[i]; math.Abs(float64(got[q*od+i]-want)) > 1e-5 {
				t.Fatalf("row %d dim %d: %v, per-row steps %v", r, i, got[q*od+i], want)
			}
		}
	}
}

// TestUncertaintyFormulas checks U^ADM and MOPO's max-std on values worked
// out by hand.
func TestUncertaintyFormulas(t *testing.T) {
	// Two dims, three k: dim 0 values 1,2,3 (variance 2/3), dim 1 all 5
	// (variance 0): U = sqrt((2/3 + 0)/2) = sqrt(1/3).
	u := admSpread([][]float32{{1, 5}, {2, 5}, {3, 5}}, 2)
	if math.Abs(u-math.Sqrt(1.0/3)) > 1e-12 {
		t.Errorf("U^ADM %v, want sqrt(1/3)", u)
	}
	if admSpread([][]float32{{1, 2}}, 2) != 0 {
		t.Error("U^ADM of a single prediction must be 0")
	}
	// Two members, d = 2, one row: member 0 variances e^0, e^0 -> norm sqrt 2;
	// member 1 variances e^ln3, e^0 -> norm 2.
	lvs := [][]float32{{0, 0}, {float32(math.Log(3)), 0}}
	if got := mopoMaxStd(lvs, 0, 2); math.Abs(got-2) > 1e-6 {
		t.Errorf("max-std %v, want 2", got)
	}
}
