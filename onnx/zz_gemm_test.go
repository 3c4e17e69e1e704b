package onnx_test

import (
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/admpo/admpo/onnx"
	ort "github.com/yalue/onnxruntime_go"
)

func TestZZGemm(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	initORT(t)
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{200, 600} {
		g := onnx.NewGraph("g", "")
		x := g.Input("x", onnx.Float, onnx.Batch, onnx.Fixed(200))
		w := g.Float("w", []int64{200, int64(n)}, randVec(rng, 200*n, 0.1))
		b := g.Float("b", []int64{int64(n)}, randVec(rng, n, 0.1))
		g.Output(g.Op("Gemm", []string{x, w, b}), "y", onnx.Float, onnx.Batch, onnx.Fixed(n))
		model, err := g.Model(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{2000, 10000, 50000} {
			xt, _ := ort.NewTensor(ort.NewShape(int64(batch), 200), randVec(rng, batch*200, 1))
			yt, _ := ort.NewEmptyTensor[float32](ort.NewShape(int64(batch), int64(n)))
			s, err := newSession(model, []string{"x"}, []string{"y"}, 2)
			if err != nil {
				t.Fatal(err)
			}
			s.Run([]ort.Value{xt}, []ort.Value{yt})
			best := time.Hour
			for r := 0; r < 5; r++ {
				st := time.Now()
				s.Run([]ort.Value{xt}, []ort.Value{yt})
				best = min(best, time.Since(st))
			}
			t.Logf("N=%d batch %d: %v, %.0f GFLOP/s", n, batch, best, 2*float64(batch)*200*float64(n)/best.Seconds()/1e9)
			s.Destroy()
			xt.Destroy()
			yt.Destroy()
		}
	}
}
