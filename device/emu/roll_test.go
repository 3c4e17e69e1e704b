package emu

import (
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/models"
)

// TestRollGRUMatchesModels runs the roll-out's GRU launches as a direct
// roll-out will: plans sorted by k (longest first) gathered from a window
// by roll_plan_in, then for each step j the packed prefix of plans with
// k > j through 3 layers (cuBLAS-style products, roll_gru0 and roll_gru,
// feature-major with ld = plans, states updated in place). A plan's
// top-layer state then is its state after its own k steps; it must match
// package models' ADM.GRUStep on the same weights, normaliser and inputs,
// within 1e-5.
func TestRollGRUMatchesModels(t *testing.T) {
	const od, ad, m, hd, layers, n = 11, 3, 4, 24, 3, 37
	rng := rand.New(rand.NewSource(5))
	adm, err := models.NewADM(models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: hd, Layers: layers, M: m}, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i := range adm.Norm.Mean {
		adm.Norm.Mean[i] = float32(rng.NormFloat64())
		adm.Norm.Std[i] = float32(0.5 + rng.Float64())
	}
	// The window: row q has lens[q] states; plan i uses row slot[i] with
	// k[i] in 1..lens, plans sorted by k descending.
	randn := func(c int) []float32 {
		x := make([]float32, c)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	S, A := randn(n*m*od), randn(n*m*ad)
	lens, slot, k := make([]int32, n), make([]int32, n), make([]int32, n)
	for q := range lens {
		lens[q] = int32(1 + rng.Intn(m))
	}
	for i, q := range rng.Perm(n) {
		slot[i], k[i] = int32(q), int32(1+rng.Intn(int(lens[q])))
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return k[idx[a]] > k[idx[b]] })
	sorted := func(x []int32) []int32 {
		y := make([]int32, n)
		for i, j := range idx {
			y[i] = x[j]
		}
		return y
	}
	slot, k = sorted(slot), sorted(k)

	// models' forward: every plan for m steps, the top state kept after
	// the plan's k-th.
	st := adm.NewState(n)
	start, want := make([]float32, n*od), make([]float32, n*hd)
	for i := range n {
		l := int(lens[slot[i]])
		copy(start[i*od:], S[(int(slot[i])*m+l-int(k[i]))*od:][:od])
	}
	for j := range m {
		act := make([]float32, n*ad)
		for i := range n {
			if j < int(k[i]) {
				l := int(lens[slot[i]])
				copy(act[i*ad:], A[(int(slot[i])*m+l-int(k[i])+j)*ad:][:ad])
			}
		}
		if err := adm.GRUStep(st, start, act); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if int(k[i]) == j+1 {
				copy(want[i*hd:], st.H[layers-1][i*hd:(i+1)*hd])
			}
		}
	}

	d := New()
	defer d.Close()
	tb := testBufs{t, d}
	must, up, upInt := tb.must, tb.up, tb.upInt
	alloc := func(c int) device.Buffer {
		b, err := d.Alloc(device.Float32, c)
		must(err)
		return b
	}
	obsN, actN := alloc(n*od), alloc(m*n*ad)
	must(d.Launch("roll_plan_in", n, obsN, actN, up(S), up(A), upInt(lens), upInt(slot), upInt(k), up(adm.Norm.Mean),
		up(adm.Norm.Std), od, ad, m, n))
	g0 := adm.GRU[0]
	p0, gi, gh := alloc(n*3*hd), alloc(n*3*hd), alloc(n*3*hd)
	must(d.Gemm(true, true, n, 3*hd, od, 1, obsN, od, up(g0.Wi[:od*3*hd]), 3*hd, 0, p0, n))
	wa := up(g0.Wi[od*3*hd:])
	var wi, wh, bi, bh, h []device.Buffer
	for _, g := range adm.GRU {
		wi, wh, bi, bh = append(wi, up(g.Wi)), append(wh, up(g.Wh)), append(bi, up(g.Bi)), append(bh, up(g.Bh))
		h = append(h, alloc(n*hd))
	}
	for j := range m {
		nj := 0
		for nj < n && int(k[nj]) > j {
			nj++
		}
		prev := 0
		if j > 0 {
			prev = 1
		}
		for l := range layers {
			if prev != 0 {
				must(d.Gemm(false, true, nj, 3*hd, hd, 1, h[l], n, wh[l], 3*hd, 0, gh, n))
			}
			if l == 0 {
				must(d.Launch("roll_gru0", nj*hd, p0, actN, wa, bi[0], gh, bh[0], h[0], h[0], hd, n, ad, j*n*ad, prev))
				continue
			}
			must(d.Gemm(false, true, nj, 3*hd, hd, 1, h[l-1], n, wi[l], 3*hd, 0, gi, n))
			must(d.Launch("roll_gru", nj*hd, gi, bi[l], gh, bh[l], h[l], h[l], hd, n, prev))
		}
	}
	got := make([]float32, n*hd)
	must(d.Download(got, h[layers-1]))
	bad := 0
	for i := range n {
		for c := range hd {
			g, w := float64(got[c*n+i]), float64(want[i*hd+c])
			if math.Abs(g-w) > 1e-5*(1+math.Abs(w)) {
				if bad++; bad <= 5 {
					t.Errorf("plan %d (k %d), unit %d: %.9g, models %.9g", i, k[i], c, g, w)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, n*hd)
	}
}
