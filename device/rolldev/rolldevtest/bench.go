package rolldevtest

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
)

// Bench times Predict (no dropout) and PredictDropout (p 0.1) on d at
// hopper's size (Hopper) over plans plans with lengths 1..m, uploads,
// host sort and downloads included, and reports "plans/s" beside
// devicetest.BenchSteps' ms per call.
func Bench(b *testing.B, d device.Device, plans int) {
	m, err := NewModel(Hopper, 1)
	if err != nil {
		b.Fatal(err)
	}
	in := RandomInputs(m, plans, rand.New(rand.NewSource(2)))
	for _, c := range []struct {
		name string
		p    float64
	}{{"plain", 0}, {"dropout", 0.1}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := NewDirect(d, m, c.p, plans)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			out := newOutputs(plans, Hopper.ObsDim)
			devicetest.BenchSteps(b, d, "call", func() error { return predictInto(e, in, out) })
			b.ReportMetric(float64(plans)*float64(b.N)/b.Elapsed().Seconds(), "plans/s")
		})
	}
}

// BenchRollout times Engine.Rollout on d with the work of admpo bench
// rollout and benchmarks/torch_rollout.py: hopper's sizes (Hopper, m 5),
// a 256x256 actor for actions in [-1, 1], random weights with the output
// layer scaled by 0.01 (no row ends), full start windows (N(0, 0.5²)
// states, U[-1, 1] actions), horizon 5, no Done. Sub-benchmarks
// "on/rows=R/chunk=C" (ADMPO-ON: no U, ModeDirect), "off/..." (ADMPO-OFF:
// U^ADM, penalty 1, ModeDirect) and "offinc/..." (ADMPO-OFF in
// ModeIncremental) for each of rows and chunks report "transitions/s" (one
// roll-out an iteration, its upload and downloads included) beside
// devicetest's ms per call. A chunk above R rolls all R rows at once (a
// larger one after it is skipped).
func BenchRollout(b *testing.B, d device.Device, rows, chunks []int) {
	benchRollout(b, d, []benchStyle{{"on", 0, rolldev.ModeDirect}, {"off", 1, rolldev.ModeDirect},
		{"offinc", 1, rolldev.ModeIncremental}}, rows, chunks)
}

// BenchRolloutIncremental is BenchRollout's "offinc" alone.
func BenchRolloutIncremental(b *testing.B, d device.Device, rows, chunks []int) {
	benchRollout(b, d, []benchStyle{{"offinc", 1, rolldev.ModeIncremental}}, rows, chunks)
}

// benchStyle is one of BenchRollout's styles: its name, penalty and mode.
type benchStyle struct {
	name    string
	penalty float32
	mode    rolldev.Mode
}

func benchRollout(b *testing.B, d device.Device, styles []benchStyle, rows, chunks []int) {
	const horizon = 5
	rng := rand.New(rand.NewSource(1))
	c := Hopper
	m, err := models.NewADM(c, rng)
	if err != nil {
		b.Fatal(err)
	}
	for i := range m.Out.W {
		m.Out.W[i] *= 0.01
	}
	low, high := make([]float64, c.ActDim), make([]float64, c.ActDim)
	for j := range low {
		low[j], high[j] = -1, 1
	}
	actor := models.NewActor(c.ObsDim, low, high, []int{256, 256}, rng)
	for _, style := range styles {
		for _, n := range rows {
			start := testfix.RandStart(rand.New(rand.NewSource(2)), n, c.M, c.ObsDim, c.ActDim, func(int) int { return c.M })
			for i, ch := range chunks {
				if i > 0 && chunks[i-1] >= n {
					continue // the same single chunk as chunks[i-1]
				}
				b.Run(fmt.Sprintf("%s/rows=%d/chunk=%d", style.name, n, ch), func(b *testing.B) {
					e, err := NewEngine(d, m, 0, actor, min(ch, n))
					if err != nil {
						b.Fatal(err)
					}
					defer e.Close()
					e.Mode = style.mode
					cfg := rollout.RollConfig{Horizon: horizon, Penalty: style.penalty}
					per := 0 // transitions a roll-out
					devicetest.BenchSteps(b, d, "rollout", func() error {
						out, err := e.Rollout(start, cfg, rand.New(rand.NewSource(3)))
						if err == nil {
							per = out.N
						}
						return err
					})
					b.ReportMetric(float64(per)*float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
				})
			}
		}
	}
}
