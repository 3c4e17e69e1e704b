package infer_test

import (
	"context"
	"fmt"
	"math/rand"
	"runtime/pprof"
	"sync"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// Tiny models of hopper's sizes (obs 11, act 3, m 5) with a 1x8 GRU, one
// 8-wide ResBlock and an 8-unit actor: ONNX Runtime's share of a roll-out
// shrinks to its per-call cost and a few flops per row, so the time left is
// the host (Go) work per transition that the engines do whatever the model
// (copies, draws, U^ADM, output rows).
var (
	tinyOnce            sync.Once
	tinyActor, tinyStep []byte
	tinyADM             []byte
	tinyErr             error
)

func tinyModels(b *testing.B) {
	ortskip.IfMissing(b)
	tinyOnce.Do(func() {
		adm := newTestADM(7, models.ADMConfig{ObsDim: 11, ActDim: 3, Hidden: 8, Layers: 1, ResBlocks: 1, M: 5})
		actor := newTestActor(8, 11, []float64{-1, -1, -1}, []float64{1, 1, 1}, []int{8})
		if tinyActor, tinyErr = onnx.ExportActor(actor, nil); tinyErr != nil {
			return
		}
		if tinyStep, tinyErr = onnx.ExportADMStep(adm, nil); tinyErr != nil {
			return
		}
		tinyADM, tinyErr = onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMPacked}, nil)
	})
	if tinyErr != nil {
		b.Fatal(tinyErr)
	}
}

// BenchmarkRolloutHost times roll-outs of the tiny models, H = 5, full
// windows, in the split the engines take with CUDA (one worker, the whole
// chunk in one call; the incremental engine on bound buffers): ns/transition
// is mostly host work. ADMPO-ON (no penalty) and ADMPO-OFF (U^ADM).
func BenchmarkRolloutHost(b *testing.B) {
	tinyModels(b)
	const horizon = 5
	cuda := infer.Options{Workers: 1, BatchRows: 1 << 30}
	for _, rows := range []int{10000, 100000} {
		start := testfix.RandStart(rand.New(rand.NewSource(2)), rows, 5, 11, 3, func(int) int { return 5 })
		for _, eng := range []string{"direct", "incremental"} {
			for _, style := range []string{"on", "off"} {
				b.Run(fmt.Sprintf("%s/%s/rows=%d", eng, style, rows), func(b *testing.B) {
					var e infer.Roller
					var err error
					if eng == "direct" {
						e, err = infer.OpenADMDirect(tinyADM, cuda)
					} else {
						o := cuda
						o.Binding = infer.BindingOn
						e, err = infer.OpenADMIncremental(tinyStep, o)
					}
					if err != nil {
						b.Fatal(err)
					}
					defer e.Close()
					p, err := infer.OpenPolicy(tinyActor, infer.Options{Threads: 1})
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close()
					cfg := infer.RollConfig{Horizon: horizon}
					if style == "off" {
						cfg.Penalty = 1
					}
					b.ResetTimer()
					total := 0
					// The label lets a CPU profile (-cpuprofile) be cut by
					// sub-benchmark: go tool pprof -tagfocus bench=...
					pprof.Do(context.Background(), pprof.Labels("bench", fmt.Sprintf("%s/%s/%d", eng, style, rows)), func(context.Context) {
						for i := 0; i < b.N; i++ {
							tr, err := e.Rollout(p, start, cfg, rand.New(rand.NewSource(int64(i))))
							if err != nil {
								b.Fatal(err)
							}
							total += tr.N
						}
					})
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/transition")
				})
			}
		}
	}
}
