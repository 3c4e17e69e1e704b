package infer

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/internal/window"
)

// chi2Crit999 is the 0.999 quantile of the chi-square distribution with
// 1..5 degrees of freedom (statistical tables).
var chi2Crit999 = []float64{0, 10.828, 13.816, 16.266, 18.467, 20.515}

// TestDrawKUniform checks that each row's backtracking length is uniform
// over 1..min(history, m) (chi-square at the 0.1% level, per history
// length) and that the draws consume the RNG in alive-row order, one
// Intn(len) per row.
func TestDrawKUniform(t *testing.T) {
	const m, draws = 5, 30000
	w := &window.Window{M: m, Len: []int{3, 1, 5, 2, 4, 5, 1}}
	alive := []int{0, 1, 2, 3, 4, 6} // row 5 has ended
	rng := rand.New(rand.NewSource(17))
	counts := map[int][]int{}
	var k []int
	for it := 0; it < draws; it++ {
		k = drawK(w, alive, rng, k)
		if len(k) != len(alive) {
			t.Fatalf("%d draws for %d alive rows", len(k), len(alive))
		}
		for q, r := range alive {
			l := w.Len[r]
			if k[q] < 1 || k[q] > l {
				t.Fatalf("row %d with %d states drew k=%d", r, l, k[q])
			}
			if counts[l] == nil {
				counts[l] = make([]int, l+1)
			}
			counts[l][k[q]]++
		}
	}
	for l, c := range counts {
		var total int
		for _, v := range c[1:] {
			total += v
		}
		exp := float64(total) / float64(l)
		var chi2 float64
		for _, v := range c[1:] {
			chi2 += (float64(v) - exp) * (float64(v) - exp) / exp
		}
		if l > 1 && chi2 > chi2Crit999[l-1] {
			t.Errorf("history %d: counts %v, chi-square %.2f > %.2f", l, c[1:], chi2, chi2Crit999[l-1])
		}
	}
	if len(counts) != 5 {
		t.Fatalf("saw history lengths %v, want 1..5", counts)
	}

	// RNG order: one Intn(len) per alive row, in row order.
	a, b := rand.New(rand.NewSource(3)), rand.New(rand.NewSource(3))
	for it := 0; it < 50; it++ {
		k = drawK(w, alive, a, k)
		for q, r := range alive {
			if want := 1 + b.Intn(w.Len[r]); k[q] != want {
				t.Fatalf("draw %d row %d: k=%d, the contract gives %d", it, r, k[q], want)
			}
		}
	}
}
