package cpukern

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/admpo/admpo/internal/blas"
)

// CompareEnv, set to 1, makes TestCompareOpenBLAS time every path against
// OpenBLAS on the training shapes, e.g.
//
//	ADMPO_CPUKERN_COMPARE=1 OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=1 \
//	  go test -run CompareOpenBLAS -v ./internal/cpukern
const CompareEnv = "ADMPO_CPUKERN_COMPARE"

// TestCompareOpenBLAS prints ms per call of each path and of OpenBLAS,
// interleaved in rounds and keeping each one's best, so that load from other
// processes affects all alike.
func TestCompareOpenBLAS(t *testing.T) {
	if os.Getenv(CompareEnv) != "1" {
		t.Skip("set " + CompareEnv + "=1 to time the paths against OpenBLAS")
	}
	blas.SetThreads(1)
	defer Use(Detected())
	rng := rand.New(rand.NewSource(6))
	paths := Supported()
	impl := netlib.Implementation{}
	trans := map[bool]gblas.Transpose{false: gblas.NoTrans, true: gblas.Trans}
	best := make([][]float64, len(trainShapes))
	calls := make([]func(), len(trainShapes))
	for si, s := range trainShapes {
		g := newCase(rng, s, 0, 1, 0, false, false)
		c := append([]float32(nil), g.c...)
		var fns []func()
		for _, isa := range paths {
			fns = append(fns, func() {
				_ = Use(isa)
				sgemm(g.tA, g.tB, g.m, g.n, g.k, 1, g.a, g.lda, g.b, g.ldb, 0, c, g.ldc, nil, false, nil)
			})
		}
		fns = append(fns, func() {
			impl.Sgemm(trans[g.tA], trans[g.tB], g.m, g.n, g.k, 1, g.a, g.lda, g.b, g.ldb, 0, c, g.ldc)
		})
		best[si] = make([]float64, len(fns))
		for i := range best[si] {
			best[si][i] = 1e9
		}
		// Calls per timing: about 2 ms of work at 50 GFLOP/s.
		reps := max(1, int(1e8/(2*float64(s.m*s.n*s.k)+1e5)))
		calls[si] = func() {
			for i, f := range fns {
				f()
				t0 := time.Now()
				for r := 0; r < reps; r++ {
					f()
				}
				best[si][i] = min(best[si][i], time.Since(t0).Seconds()*1e3/float64(reps))
			}
		}
	}
	for round := 0; round < 15; round++ {
		for _, f := range calls {
			f()
		}
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%-24s", "shape (ms per call)")
	for _, isa := range paths {
		fmt.Fprintf(&hdr, " %9v", isa)
	}
	fmt.Fprintf(&hdr, " %9s  %s", "OpenBLAS", "OpenBLAS/"+Detected().String())
	t.Log(blas.Describe() + ", threads 1")
	t.Log(hdr.String())
	for si, s := range trainShapes {
		var row strings.Builder
		fmt.Fprintf(&row, "%-24v", s)
		for _, ms := range best[si] {
			fmt.Fprintf(&row, " %9.4f", ms)
		}
		fmt.Fprintf(&row, "  %.2f", best[si][len(paths)]/best[si][len(paths)-1])
		t.Log(row.String())
	}
	for _, isa := range paths {
		_ = Use(isa)
		t.Logf("%v: %.1f GFLOP/s at 256^3 (NN)", isa, PeakGFLOPS(256, 200))
	}
	t.Logf("OpenBLAS: %.1f GFLOP/s at 256^3 (NN)", blas.PeakSgemm(256, 200))
}
