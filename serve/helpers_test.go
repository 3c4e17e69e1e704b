package serve

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
)

const (
	testObs = 5
	testAct = 3
	testM   = 4
	seed    = 77
)

// fixture is a random actor and ADM written as a bundle.
type fixture struct {
	actor *models.Actor
	adm   *models.ADM
	dir   string
}

func newFixture(t testing.TB, withADM bool) *fixture {
	t.Helper()
	return newFixtureStd(t, withADM, 0)
}

// newFixtureStd is newFixture with every std of the ADM's input normaliser
// set to admStd when it is positive (a small one makes large inputs
// overflow inside the ADM).
func newFixtureStd(t testing.TB, withADM bool, admStd float32) *fixture {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	low, high := []float64{-1, -2, 0}, []float64{1, 0.5, 4}
	f := &fixture{actor: models.NewActor(testObs, low, high, []int{16, 16}, rng)}
	for i := range f.actor.Net.Layers {
		for j := range f.actor.Net.Layers[i].W {
			f.actor.Net.Layers[i].W[j] *= 2
		}
	}
	pol, err := onnx.ExportActor(f.actor, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := policies.Bundle{Policy: pol, Manifest: policies.Manifest{
		Task: "serve-test", Algorithm: "admpo-on", ActLow: low, ActHigh: high,
		Provenance: map[string]string{"note": "random weights"},
	}}
	if withADM {
		f.adm, err = models.NewADM(models.ADMConfig{ObsDim: testObs, ActDim: testAct, Hidden: 16, Layers: 1, ResBlocks: 1, M: testM}, rng)
		if err != nil {
			t.Fatal(err)
		}
		if admStd > 0 {
			for i := range f.adm.Norm.Std {
				f.adm.Norm.Std[i] = admStd
			}
		}
		if b.ADM, err = onnx.ExportADM(f.adm, onnx.ADMOptions{}, nil); err != nil {
			t.Fatal(err)
		}
		b.Manifest.Calibration = &policies.Calibration{Samples: 100, Quantiles: []policies.Quantile{{P: 50, U: 0.05}, {P: 99, U: 0.5}}}
	}
	f.dir = filepath.Join(t.TempDir(), "bundle")
	if err := policies.WriteBundle(f.dir, b); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) open(t testing.TB, opts policies.Options) *policies.Policy {
	t.Helper()
	p, err := policies.Open(f.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// testRange is the observation range newFixtureRange's calibration records.
var testRange = policies.InputRange{ObsLow: []float64{-1, -2, -1, -1, -1}, ObsHigh: []float64{1, 2, 1, 1, 3}}

// newFixtureRange is newFixtureStd with an ADM whose calibration records
// testRange as the data's observation range.
func newFixtureRange(t testing.TB, admStd float32) *fixture {
	t.Helper()
	f := newFixtureStd(t, true, admStd)
	b, err := policies.ReadBundle(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	r := testRange
	b.Manifest.Calibration.Range = &r
	f.dir = filepath.Join(t.TempDir(), "bundle-range")
	if err := policies.WriteBundle(f.dir, *b); err != nil {
		t.Fatal(err)
	}
	return f
}
