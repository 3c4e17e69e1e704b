package benchmarks

import (
	"fmt"
	"runtime"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/onnx"
)

// ortPeakSgemm measures ONNX Runtime's own float32 MatMul rate (GFLOP/s) on
// an n x n by n x n product with one intra-op thread per CPU: the ceiling
// for the roll-out engines, which run their products in ONNX Runtime (its
// MLAS kernels may use wider vector units than OpenBLAS's selected core).
func ortPeakSgemm(n, reps int, provider string) (float64, error) {
	g := onnx.NewGraph("matmul_peak", "n x n MatMul for a peak-rate measurement")
	x := g.Input("x", onnx.Float, onnx.Fixed(n), onnx.Fixed(n))
	w := make([]float32, n*n)
	for i := range w {
		w[i] = float32(i%5) * 0.1
	}
	y := g.Op("MatMul", []string{x, g.Float("w", []int64{int64(n), int64(n)}, w)})
	g.Output(y, "y", onnx.Float, onnx.Fixed(n), onnx.Fixed(n))
	model, err := g.Model(nil)
	if err != nil {
		return 0, fmt.Errorf("benchmarks: matmul peak graph: %w", err)
	}
	s, err := infer.Open(model, []string{"x"}, []string{"y"}, infer.Options{Provider: provider, Threads: runtime.NumCPU()})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	in, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(n), int64(n)))
	if err != nil {
		return 0, fmt.Errorf("benchmarks: matmul peak tensor: %w", err)
	}
	defer in.Destroy()
	for i, d := 0, in.GetData(); i < len(d); i++ {
		d[i] = float32(i%7) * 0.1
	}
	out, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(n), int64(n)))
	if err != nil {
		return 0, fmt.Errorf("benchmarks: matmul peak tensor: %w", err)
	}
	defer out.Destroy()
	best := 0.0
	for r := 0; r <= reps; r++ { // the first run warms up and is not counted
		t := time.Now()
		if err := s.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
			return 0, err
		}
		if g := 2 * float64(n) * float64(n) * float64(n) / time.Since(t).Seconds() / 1e9; r > 0 && g > best {
			best = g
		}
	}
	return best, nil
}
