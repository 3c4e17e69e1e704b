package benchmarks

import (
	"fmt"
	"math/rand"
	"strconv"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// RolloutConfig sizes the roll-out benchmark; DefaultRolloutConfig is the
// issue's setting (hopper dims, the paper's model size).
type RolloutConfig struct {
	ObsDim, ActDim, M      int
	Hidden, Layers, Blocks int
	Rows                   []int
	Horizon                int
	Threads                int
	Repeats                int
	Provider               string
}

// DefaultRolloutConfig: obs 11, act 3, m 5, 3x200 GRU, 4 ResBlocks, 256x256
// actor, batches of 10k and 50k start rows, H = 5.
func DefaultRolloutConfig() RolloutConfig {
	return RolloutConfig{ObsDim: 11, ActDim: 3, M: 5, Hidden: 200, Layers: 3, Blocks: 4,
		Rows: []int{10000, 50000}, Horizon: 5, Repeats: 2}
}

// flops counts the multiply-adds (x2) of the matrix products each engine
// executes per transition, the work the GFLOP/s column is based on.
type flops struct{ actor, gruStep, head float64 }

func countFlops(c RolloutConfig) flops {
	h := float64(c.Hidden)
	in := float64(c.ObsDim + c.ActDim)
	gru := 2 * 3 * h * (in + h) // layer 0
	for l := 1; l < c.Layers; l++ {
		gru += 2 * 3 * h * (h + h)
	}
	head := float64(c.Blocks)*2*h*h + 2*h*2*float64(c.ObsDim+1)
	actor := 2 * (float64(c.ObsDim)*256 + 256*256 + 256*2*float64(c.ActDim))
	return flops{actor: actor, gruStep: gru, head: head}
}

// perTransition is the executed work of one transition for an engine.
func (f flops) perTransition(engine string, penalty bool, m int) float64 {
	mf := float64(m)
	switch {
	case engine == "direct" && !penalty: // one plan, the unrolled graph runs all m steps
		return f.actor + mf*f.gruStep + f.head
	case engine == "direct": // m plans of m (padded) steps
		return f.actor + mf*mf*f.gruStep + mf*f.head
	default: // incremental: m cached plans advance one step, m heads
		return f.actor + mf*(f.gruStep+f.head)
	}
}

// Rollout measures the direct and incremental ADM-Roll engines with random
// models of the configured size, without (ADMPO-ON) and with (ADMPO-OFF)
// the U^ADM penalty.
func Rollout(c RolloutConfig) (*Table, error) {
	rng := rand.New(rand.NewSource(1))
	low, high := make([]float64, c.ActDim), make([]float64, c.ActDim)
	for i := range low {
		low[i], high[i] = -1, 1
	}
	actor := models.NewActor(c.ObsDim, low, high, []int{256, 256}, rng)
	adm, err := models.NewADM(models.ADMConfig{ObsDim: c.ObsDim, ActDim: c.ActDim, Hidden: c.Hidden, Layers: c.Layers,
		ResBlocks: c.Blocks, M: c.M}, rng)
	if err != nil {
		return nil, err
	}
	for i := range adm.Out.W { // small predicted deltas keep roll-outs bounded
		adm.Out.W[i] *= 0.01
	}
	ab, err := onnx.ExportActor(actor, nil)
	if err != nil {
		return nil, err
	}
	direct, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMUnrolled}, nil)
	if err != nil {
		return nil, err
	}
	step, err := onnx.ExportADMStep(adm, nil)
	if err != nil {
		return nil, err
	}
	peak := blas.PeakSgemm(1024, 5)
	t := &Table{Title: "admpo bench rollout: ADM-Roll transitions/s (higher is better)", Header: machine(),
		Columns: []string{"style", "engine", "rows", "H", "transitions/s", "GFLOP/s", "% of sgemm peak"}}
	t.Header["sgemm peak (1024^3, OpenBLAS)"] = fmt.Sprintf("%.0f GFLOP/s", peak)
	t.Header["model"] = fmt.Sprintf("obs %d, act %d, m %d, GRU %dx%d, %d ResBlocks, actor 256x256", c.ObsDim, c.ActDim, c.M, c.Layers, c.Hidden, c.Blocks)
	t.Header["ort threads"] = strconv.Itoa(c.Threads) + " (0: ONNX Runtime's default)"
	f := countFlops(c)
	for _, penalty := range []bool{false, true} {
		style := "ADMPO-ON (no penalty)"
		if penalty {
			style = "ADMPO-OFF (U^ADM)"
		}
		for _, rows := range c.Rows {
			res, err := infer.BenchRollout(infer.BenchConfig{Actor: ab, ADM: direct, ADMStep: step, Rows: rows,
				Horizon: c.Horizon, Penalty: penalty, Threads: c.Threads, Provider: c.Provider, Repeats: c.Repeats, Seed: 3})
			if err != nil {
				return nil, err
			}
			for _, r := range res {
				g := r.PerSecond * f.perTransition(r.Engine, penalty, c.M) / 1e9
				t.Rows = append(t.Rows, []any{style, r.Engine, rows, c.Horizon, r.PerSecond, g, 100 * g / peak})
			}
		}
	}
	t.Notes = append(t.Notes, "GFLOP/s counts the matrix products each engine executes: direct runs all m GRU steps of each plan (m plans with U^ADM); incremental advances m cached plans by one step and runs m heads",
		"direct uses the unrolled ADM graph (the start state's input projection computed once per plan)")
	return t, nil
}
