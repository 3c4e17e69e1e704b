package infer

import (
	"errors"
	"math"
	"math/rand"
	"runtime"
	"sync"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestSplitBounds checks the piece boundaries: they start at 0, end at n,
// increase, hold at most rows rows each, differ in size by at most one row,
// and give every worker a piece when n allows pieces of minPieceRows.
func TestSplitBounds(t *testing.T) {
	for _, c := range []struct{ workers, rows, n, wantPieces int }{
		{1, 2048, 1, 1}, {1, 2048, 2048, 1}, {1, 2048, 2049, 2}, {2, 2048, 8192, 4},
		{2, 2048, 8193, 5}, {2, 2048, 1000, 2}, {2, 2048, 300, 1}, {4, 2048, 600, 2},
		{3, 5, 29, 6}, {2, 1 << 30, 50000, 2},
	} {
		b := split{workers: c.workers, rows: c.rows}.bounds(c.n, nil)
		if b[0] != 0 || b[len(b)-1] != c.n || len(b)-1 != c.wantPieces {
			t.Fatalf("%+v: bounds %v, want %d pieces over [0, %d]", c, b, c.wantPieces, c.n)
		}
		lo, hi := c.n, 0
		for i := 1; i < len(b); i++ {
			s := b[i] - b[i-1]
			if s <= 0 || s > c.rows {
				t.Fatalf("%+v: piece %d has %d rows", c, i-1, s)
			}
			lo, hi = min(lo, s), max(hi, s)
		}
		if hi-lo > 1 && len(b) > 2 && b[len(b)-1]-b[len(b)-2] != lo {
			t.Fatalf("%+v: uneven pieces %v", c, b)
		}
	}
}

// TestSplitEach checks that every piece runs exactly once, that a worker
// never runs two pieces at once, and that an error stops the run and is
// returned.
func TestSplitEach(t *testing.T) {
	s := split{workers: 3, rows: 4}
	b := s.bounds(50, nil)
	var mu sync.Mutex
	seen := map[int]int{}
	busy := make([]bool, 3)
	err := s.each(b, func(w, lo, hi int) error {
		mu.Lock()
		if busy[w] {
			mu.Unlock()
			return errors.New("worker reused while busy")
		}
		busy[w] = true
		for i := lo; i < hi; i++ {
			seen[i]++
		}
		mu.Unlock()
		mu.Lock()
		busy[w] = false
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if seen[i] != 1 {
			t.Fatalf("row %d processed %d times", i, seen[i])
		}
	}
	boom := errors.New("boom")
	if err := s.each(b, func(w, lo, hi int) error {
		if lo >= 20 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
}

// TestRowBounds checks that the incremental engine's pieces never cut a
// row's plans apart.
func TestRowBounds(t *testing.T) {
	e := &ADMIncremental{split: split{workers: 2, rows: 7}}
	for r, l := range []int{4, 1, 4, 3, 4, 4, 2, 4, 4, 4, 1, 3} {
		for j := 0; j < l; j++ {
			e.pairs = append(e.pairs, pair{r, j})
		}
	}
	e.rowBounds()
	b := e.bnd
	if b[0] != 0 || b[len(b)-1] != len(e.pairs) || len(b) < 3 {
		t.Fatalf("bounds %v for %d plans", b, len(e.pairs))
	}
	for i := 1; i+1 < len(b); i++ {
		if b[i] <= b[i-1] || e.pairs[b[i]].r == e.pairs[b[i]-1].r {
			t.Fatalf("bounds %v cut row %d", b, e.pairs[b[i]].r)
		}
	}
}

// TestIncrementalWithoutFreshRows runs the incremental engine as it runs a
// step graph without the fresh_rows metadata (every plan through the
// recurrent products, new plans from zeroed cache slots) and compares it
// with the same engine skipping them for new plans: same seed, same
// transitions. (The fresh-row engine itself is checked against the naive
// reference in the external tests.)
func TestIncrementalWithoutFreshRows(t *testing.T) {
	if err := Init(); err != nil {
		if errors.Is(err, ErrORTMissing) {
			t.Skipf("ONNX Runtime not installed: %v", err)
		}
		t.Fatal(err)
	}
	const m, od, ad, n = 3, 4, 2, 13
	rng := rand.New(rand.NewSource(5))
	adm, err := models.NewADM(models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: 12, Layers: 2, ResBlocks: 1, M: m}, rng)
	if err != nil {
		t.Fatal(err)
	}
	actor := models.NewActor(od, []float64{-1, -1}, []float64{1, 1}, []int{16}, rng)
	ab, err := onnx.ExportActor(actor, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := onnx.ExportADMStep(adm, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Threads: 1, Workers: 2, BatchRows: 4}
	p, err := OpenPolicy(ab, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var tr [2]*Transitions
	for i, fresh := range []bool{true, false} {
		e, err := OpenADMIncremental(sb, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !e.freshRows {
			t.Fatal("the step graph lacks the fresh_rows metadata")
		}
		e.freshRows = fresh
		start := benchStart(n, m, od, ad, rand.New(rand.NewSource(6)))
		for r := range start.Len {
			start.Len[r] = 1 + r%m
		}
		tr[i], err = e.Rollout(p, start, RollConfig{Horizon: 4, Penalty: 0.5}, rand.New(rand.NewSource(7)))
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if tr[0].N != tr[1].N || tr[0].N != n*4 {
		t.Fatalf("%d and %d transitions, want %d", tr[0].N, tr[1].N, n*4)
	}
	for _, f := range [][2][]float32{{tr[0].NextObs, tr[1].NextObs}, {tr[0].Rew, tr[1].Rew}, {tr[0].Uncertainty, tr[1].Uncertainty}} {
		for i := range f[0] {
			if d := math.Abs(float64(f[0][i] - f[1][i])); d > 1e-5*math.Max(1, math.Abs(float64(f[1][i]))) {
				t.Fatalf("value %d: %g with fresh rows, %g without", i, f[0][i], f[1][i])
			}
		}
	}
}

// TestEngineDefaults checks the ADM-Roll engines' defaults per provider:
// on the CPU one worker per CPU (one when Threads is set), 1024-row calls
// and 8192-row chunks; with CUDA 4 workers, whole-batch calls and
// 32768-row chunks; an explicit Workers wins; the ensemble keeps 8192.
func TestEngineDefaults(t *testing.T) {
	for _, c := range []struct {
		name                   string
		opts                   Options
		workers, rows, chunkRs int
	}{
		{"cpu", Options{}, runtime.GOMAXPROCS(0), 1024, 8192},
		{"cpu threads", Options{Threads: 2}, 1, 1024, 8192},
		{"cuda", Options{Provider: "cuda"}, 4, 1 << 30, 32768},
		{"cuda workers 3", Options{Provider: "cuda", Workers: 3}, 3, 1 << 30, 32768},
	} {
		s := engineSplit(c.opts)
		if s.workers != c.workers || s.rows != c.rows {
			t.Errorf("%s: split workers %d rows %d, want %d and %d", c.name, s.workers, s.rows, c.workers, c.rows)
		}
		if got := chunkRowsOf(&ADMDirect{split: s}); got != c.chunkRs {
			t.Errorf("%s: direct engine's chunk rows %d, want %d", c.name, got, c.chunkRs)
		}
		if got := chunkRowsOf(&ADMIncremental{split: s}); got != c.chunkRs {
			t.Errorf("%s: incremental engine's chunk rows %d, want %d", c.name, got, c.chunkRs)
		}
	}
	if got := chunkRowsOf(&Ensemble{}); got != 8192 {
		t.Errorf("ensemble's chunk rows %d, want 8192", got)
	}
}
