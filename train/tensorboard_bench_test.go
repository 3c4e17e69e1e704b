package train

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/admpo/admpo/sac"
)

// BenchmarkTensorBoardVsSACUpdate times one logged step of the TensorBoard
// writer (building an online admpo row's scalars, m = 5 per-k errors
// included, and writing its event) against one SAC update at Hopper's
// sizes (256x256, batch 256; sac.BenchUpdate's median) measured in the same
// process, and prints the ratio. A run logs once per evaluation (every 500
// to 1000 env steps, each one or more updates), so the writer's share of
// training time is this ratio divided by the steps between evaluations.
//
//	go test -run XXX -bench TensorBoardVsSACUpdate -benchtime 2000x ./train/
func BenchmarkTensorBoardVsSACUpdate(b *testing.B) {
	upd, err := sac.BenchUpdate(30)
	if err != nil {
		b.Fatal(err)
	}
	var l loop
	if err := l.openTB(b.TempDir(), -1); err != nil {
		b.Fatal(err)
	}
	defer l.closeTB()
	r := Record{Step: 0, Wall: 0, EvalMean: 3012.5, EvalStd: 41.2, TrainReturn: 2890, ModelTrainLoss: 0.031,
		ModelHoldoutLoss: 0.045, ModelHoldoutPerK: []float64{0.01, 0.02, 0.04, 0.06, 0.09}, RolloutLen: 7,
		ModelBuffer: 400000, Alpha: 0.08, CriticLoss: 2.5, ActorLoss: -120}
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		r.Step += 1000
		r.Wall += 60
		if err := l.logTB(r, progressScalars(r, "eval/return", true)); err != nil {
			b.Fatal(err)
		}
	}
	perLog := float64(time.Since(t0).Nanoseconds()) / float64(b.N) / 1e6
	b.StopTimer()
	ratio := perLog / upd.Total
	b.ReportMetric(perLog*1e3, "µs/logged-step")
	b.ReportMetric(upd.Total*1e3, "µs/sac-update")
	b.ReportMetric(ratio*100, "%-of-one-update")
	if b.N == 1 {
		return // the framework's first, single-iteration run: it times the file's creation
	}
	fmt.Printf("tensorboard writer %.1f µs per logged step | SAC update %.2f ms | ratio %.4f%% of one update "+
		"(%.6f%% per update at one event per 1000 updates)\n", perLog*1e3, upd.Total, 100*ratio, 100*ratio/1000)
	if math.IsNaN(ratio) {
		b.Fatal("no ratio")
	}
}
