package onnx_test

import (
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// admCaseWithLengths is newADMCase with the given per-row lengths (already
// in 1..m) and the reference outputs recomputed for them.
func admCaseWithLengths(m *models.ADM, seed int64, lengths []int32) *admCase {
	tc := newADMCase(m, len(lengths), seed)
	tc.lengths = append([]int32(nil), lengths...)
	tc.clamped = tc.clamped[:0]
	for _, l := range lengths {
		tc.clamped = append(tc.clamped, int(l))
	}
	tc.setWants()
	return tc
}

// TestADMPackedMatchesReference checks the packed form (each row runs only
// its own k GRU steps, rows reordered inside the graph) against the plain-Go
// reference: random lengths including the clamped 0 and m+3, lengths in
// increasing and decreasing order, every row of length 1 (steps 2..m get
// empty batches), every row of length m, a single row, and the hopper size.
func TestADMPackedMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 24, Layers: 3, ResBlocks: 2, M: 4}
	m := randADM(t, 6, cfg)
	opts := onnx.ADMOptions{Form: onnx.ADMPacked}
	t.Run("random", func(t *testing.T) { newADMCase(m, 37, 7).check(t, opts) })
	lens := func(n int, f func(b int) int32) []int32 {
		l := make([]int32, n)
		for b := range l {
			l[b] = f(b)
		}
		return l
	}
	for _, c := range []struct {
		name string
		l    []int32
	}{
		{"increasing", lens(20, func(b int) int32 { return int32(1 + b*cfg.M/20) })},
		{"decreasing", lens(20, func(b int) int32 { return int32(cfg.M - b*cfg.M/20) })},
		{"all1", lens(9, func(int) int32 { return 1 })},
		{"allM", lens(9, func(int) int32 { return int32(cfg.M) })},
		{"no2", lens(12, func(b int) int32 { return []int32{1, 3, 4}[b%3] })},
		{"single", []int32{3}},
	} {
		t.Run(c.name, func(t *testing.T) { admCaseWithLengths(m, 8, c.l).check(t, opts) })
	}
	t.Run("hopper", func(t *testing.T) {
		h := randADM(t, 8, models.DefaultADMConfig(11, 3, 5))
		newADMCase(h, 24, 9).check(t, opts)
	})
	t.Run("m1", func(t *testing.T) {
		one := randADM(t, 10, models.ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 0, M: 1})
		newADMCase(one, 9, 11).check(t, opts)
	})
}

// TestADMPackedOptions: the packed form records adm_form=packed and refuses
// AllSteps (it never computes every step of every row).
func TestADMPackedOptions(t *testing.T) {
	ortskip.IfMissing(t)
	m := randADM(t, 3, models.ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 1, M: 3})
	if _, err := onnx.ExportADM(m, onnx.ADMOptions{Form: onnx.ADMPacked, AllSteps: true}, nil); err == nil ||
		!strings.Contains(err.Error(), "all_mean") {
		t.Fatalf("packed with AllSteps: err %v, want a refusal naming all_mean", err)
	}
	b, err := onnx.ExportADM(m, onnx.ADMOptions{Form: onnx.ADMPacked}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "packed") || onnx.ADMPacked.String() != "packed" {
		t.Fatal("the packed export does not carry adm_form=packed")
	}
}
