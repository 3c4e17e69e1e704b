package infer_test

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// sameBits reports the first field in which a and b differ bit for bit
// (Obs, Act, Rew, NextObs, Done, Uncertainty, Step, Back), or "".
func sameBits(a, b *infer.Transitions) string {
	bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	switch {
	case a.N != b.N:
		return fmt.Sprintf("%d transitions vs %d", a.N, b.N)
	case !slices.Equal(bits(a.Obs), bits(b.Obs)):
		return "Obs"
	case !slices.Equal(bits(a.Act), bits(b.Act)):
		return "Act"
	case !slices.Equal(bits(a.Rew), bits(b.Rew)):
		return "Rew"
	case !slices.Equal(bits(a.NextObs), bits(b.NextObs)):
		return "NextObs"
	case !slices.Equal(a.Done, b.Done):
		return "Done"
	case !slices.Equal(bits(a.Uncertainty), bits(b.Uncertainty)):
		return "Uncertainty"
	case !slices.Equal(a.Step, b.Step):
		return "Step"
	case !slices.Equal(a.Back, b.Back):
		return "Back"
	}
	return ""
}

// TestRolloutWantMean: with RollConfig.WantMean every engine (ADMDirect,
// ADMIncremental, both with MC dropout too, and the ensemble) returns the
// model's mean next observations, matching the plain-Go reference's means
// (testfix.RefRollout records the mean it samples around), while the roll-out
// itself is bit for bit the one without WantMean (the option draws
// nothing); without it MeanNextObs stays nil. The means differ from the
// sampled next states (the sample's noise is not zero).
func TestRolloutWantMean(t *testing.T) {
	const n, m, horizon, seed = 20, 3, 4, 31
	f := newADMFixture(t, 71, smallADMConfig(m), onnx.ADMPacked)
	dropDirect, dropInc := dropEngines(t, f, onnx.ADMPacked, testDropout, testOpts)
	ens := newEnsFixture(t)
	admStart := testfix.RandStart(rand.New(rand.NewSource(3)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	ensStart := testfix.RandStart(rand.New(rand.NewSource(4)), n, 1, 5, 2, func(int) int { return 1 })
	for _, c := range []struct {
		name   string
		r      infer.Roller
		p      *infer.Policy
		start  *infer.Start
		od, ad int
		ref    testfix.RefModel
	}{
		{"direct", f.direct, f.pol, admStart, f.obsDim, f.actDim, testfix.RefADMModel(f.adm)},
		{"incremental", f.inc, f.pol, admStart, f.obsDim, f.actDim, testfix.RefADMModel(f.adm)},
		{"direct-dropout", dropDirect, f.pol, admStart, f.obsDim, f.actDim, testfix.RefADMDropModel(f.adm, testDropout)},
		{"incremental-dropout", dropInc, f.pol, admStart, f.obsDim, f.actDim, testfix.RefADMDropModel(f.adm, testDropout)},
		{"ensemble", ens.eng, ens.pol, ensStart, 5, 2, testfix.RefEnsembleModel(ens.ens)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := infer.RollConfig{Horizon: horizon, Penalty: 0.5, Done: doneOutside(1.5), ChunkRows: 7}
			plain := rollSeeded(t, c.r, c.p, c.start, cfg, seed)
			if plain.MeanNextObs != nil {
				t.Fatalf("MeanNextObs filled (%d values) without WantMean", len(plain.MeanNextObs))
			}
			cfg.WantMean = true
			got := rollSeeded(t, c.r, c.p, c.start, cfg, seed)
			if d := sameBits(got, plain); d != "" {
				t.Fatalf("WantMean changed the roll-out: %s differs", d)
			}
			if len(got.MeanNextObs) != got.N*c.od {
				t.Fatalf("%d mean values for %d transitions of %d", len(got.MeanNextObs), got.N, c.od)
			}
			checkRef(t, "means vs reference", got, c.p, c.start, c.od, c.ad, cfg, seed, c.ref)
			if slices.Equal(got.MeanNextObs, got.NextObs) {
				t.Fatal("the means equal the sampled next states")
			}
		})
	}
}
