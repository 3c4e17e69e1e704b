package infer_test

import (
	"math/rand"

	"github.com/admpo/admpo/models"
)

// Random models with every parameter non-trivial (normalisers, bounds,
// LayerNorm affine), so that a forgotten term shows up in the comparisons.

func randNormalizer(rng *rand.Rand, dim int) models.Normalizer {
	n := models.NewNormalizer(dim)
	for i := range n.Mean {
		n.Mean[i] = float32(0.3 * rng.NormFloat64())
		n.Std[i] = float32(0.5 + rng.Float64())
	}
	return n
}

func randBounds(rng *rand.Rand, dim int) models.LogVarBounds {
	b := models.NewLogVarBounds(dim)
	for i := range b.Max {
		b.Max[i] = float32(-1.5 + rng.Float64())
		b.Min[i] = float32(-8 + rng.Float64())
	}
	return b
}

func newTestADM(seed int64, cfg models.ADMConfig) *models.ADM {
	rng := rand.New(rand.NewSource(seed))
	a, err := models.NewADM(cfg, rng)
	if err != nil {
		panic(err)
	}
	a.Norm = randNormalizer(rng, cfg.ObsDim+cfg.ActDim)
	a.Bounds = randBounds(rng, cfg.ObsDim+1)
	for b := range a.Blocks {
		for i := range a.Blocks[b].Norm.Gamma {
			a.Blocks[b].Norm.Gamma[i] = float32(0.8 + 0.4*rng.Float64())
			a.Blocks[b].Norm.Beta[i] = float32(0.1 * rng.NormFloat64())
		}
	}
	return a
}

func newTestActor(seed int64, obsDim int, low, high []float64, hidden []int) *models.Actor {
	rng := rand.New(rand.NewSource(seed))
	return models.NewActor(obsDim, low, high, hidden, rng)
}

func newTestEnsemble(seed int64, obsDim, actDim, members int, hidden []int, elites []int) *models.Ensemble {
	rng := rand.New(rand.NewSource(seed))
	e := models.NewEnsemble(obsDim, actDim, members, hidden, rng)
	e.Norm = randNormalizer(rng, obsDim+actDim)
	for k := range e.Bounds {
		e.Bounds[k] = randBounds(rng, obsDim+1)
	}
	e.Elites = elites
	return e
}
