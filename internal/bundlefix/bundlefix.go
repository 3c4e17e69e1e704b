package bundlefix

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
)

// Hopper writes the bundle of a random hopper-sized actor (11
// observations, 3 actions in [-1, 1], 16x16 hidden units, weights drawn
// from seed), exported with task metadata hopper, whose manifest names the
// algorithm and the run kind ("" for none), into a new temporary directory;
// it returns the bundle's directory and the actor.
func Hopper(t testing.TB, seed int64, algorithm, runKind string) (string, *models.Actor) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	low, high := []float64{-1, -1, -1}, []float64{1, 1, 1}
	a := models.NewActor(11, low, high, []int{16, 16}, rand.New(rand.NewSource(seed)))
	pol, err := onnx.ExportActor(a, map[string]string{"task": "hopper"})
	if err != nil {
		t.Fatal(err)
	}
	m := policies.Manifest{Task: "hopper", Algorithm: algorithm, RunKind: runKind, ActLow: low, ActHigh: high}
	if err := policies.WriteBundle(dir, policies.Bundle{Policy: pol, Manifest: m}); err != nil {
		t.Fatal(err)
	}
	return dir, a
}
