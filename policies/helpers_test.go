package policies

import (
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// fixture is a random actor and ADM with their exports.
type fixture struct {
	actor    *models.Actor
	adm      *models.ADM
	policy   []byte
	admBytes []byte
	low      []float64
	high     []float64
}

const testTask = "unit-test-task"

// newFixture builds a random actor (obsDim -> actDim) and a small ADM with
// a non-trivial normaliser, exported with onnx.
func newFixture(t testing.TB, seed int64, obsDim, actDim, m int) *fixture {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	f := &fixture{}
	for i := 0; i < actDim; i++ {
		lo := -1 - rng.Float64()
		f.low = append(f.low, lo)
		f.high = append(f.high, lo+0.5+2*rng.Float64())
	}
	f.actor = models.NewActor(obsDim, f.low, f.high, []int{32, 32}, rng)
	// Larger weights than the default init so that the outputs spread.
	for i := range f.actor.Net.Layers {
		for j := range f.actor.Net.Layers[i].W {
			f.actor.Net.Layers[i].W[j] *= 2
		}
	}
	var err error
	f.policy, err = onnx.ExportActor(f.actor, map[string]string{"task": testTask})
	if err != nil {
		t.Fatal(err)
	}
	f.adm, err = models.NewADM(models.ADMConfig{ObsDim: obsDim, ActDim: actDim, Hidden: 24, Layers: 2, ResBlocks: 1, M: m}, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.adm.Norm.Mean {
		f.adm.Norm.Mean[i] = float32(rng.NormFloat64() * 0.3)
		f.adm.Norm.Std[i] = float32(0.5 + rng.Float64())
	}
	f.admBytes, err = onnx.ExportADM(f.adm, onnx.ADMOptions{}, map[string]string{"task": testTask})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// newHopperFixture is an actor of the paper's size for Hopper: 11 -> 256x256 -> 3.
func newHopperFixture(t testing.TB) *fixture {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	f := &fixture{low: []float64{-1, -1, -1}, high: []float64{1, 1, 1}}
	f.actor = models.NewActor(11, f.low, f.high, []int{256, 256}, rng)
	var err error
	if f.policy, err = onnx.ExportActor(f.actor, map[string]string{"task": testTask}); err != nil {
		t.Fatal(err)
	}
	return f
}

// bundle returns the fixture as a Bundle with a calibration.
func (f *fixture) bundle(withADM bool) Bundle {
	b := Bundle{
		Manifest: Manifest{
			Task: testTask, Algorithm: "admpo-on",
			ObsLow: infs(f.actor.ObsDim, -1), ObsHigh: infs(f.actor.ObsDim, 1),
			ActLow: f.low, ActHigh: f.high,
			Provenance: map[string]string{"seed": "7", "commit": "abc123"},
		},
		Policy: f.policy,
	}
	if withADM {
		b.ADM = f.admBytes
		b.Manifest.Calibration = &Calibration{Samples: 1000, Quantiles: []Quantile{{50, 0.1}, {95, 0.3}, {99, 0.5}}}
	}
	return b
}

func infs(n int, sign int) Floats {
	v := make(Floats, n)
	for i := range v {
		v[i] = math.Inf(sign)
	}
	return v
}

// newActor opens a single actor of the runtime (a pool of one).
func newActor(rt string, model []byte, info *ModelInfo, od, ad int, opts Options) (actor, error) {
	as, err := newActors(rt, model, info, od, ad, 1, opts)
	if err != nil {
		return nil, err
	}
	return as[0], nil
}

// writeTestBundle writes f's bundle (with its ADM or not) into a new
// temporary directory and returns the bundle's directory.
func writeTestBundle(t testing.TB, f *fixture, withADM bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	if err := WriteBundle(dir, f.bundle(withADM)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openTestPolicy writes f's bundle (with its ADM or not) and opens it with
// opts; the policy closes when the test ends.
func openTestPolicy(t testing.TB, f *fixture, withADM bool, opts Options) *Policy {
	t.Helper()
	p, err := Open(writeTestBundle(t, f, withADM), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
