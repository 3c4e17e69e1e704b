package infer_test

import (
	"math"
	"math/rand"

	"github.com/admpo/admpo/models"
)

// Plain-Go float64 forwards of admpo's networks, written from the equations
// documented in models/weights.go (not from the exporter or models/forward.go):
// the independent reference the ONNX Runtime results are compared with.

// linear64 is y = x·W + B with W [In, Out] row-major.
func linear64(l *models.Linear, x []float64) []float64 {
	y := make([]float64, l.Out)
	for o := 0; o < l.Out; o++ {
		s := float64(l.B[o])
		for i := 0; i < l.In; i++ {
			s += x[i] * float64(l.W[i*l.Out+o])
		}
		y[o] = s
	}
	return y
}

func sigmoid64(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

func softplus64(v float64) float64 {
	if v > 30 {
		return v
	}
	return math.Log1p(math.Exp(v))
}

// softClamp applies lv = Max - softplus(Max - lv); lv = Min + softplus(lv - Min).
func softClamp(b *models.LogVarBounds, lv []float64) []float64 {
	out := make([]float64, len(lv))
	for i, v := range lv {
		mx, mn := float64(b.Max[i]), float64(b.Min[i])
		v = mx - softplus64(mx-v)
		out[i] = mn + softplus64(v-mn)
	}
	return out
}

// normalize64 z-scores [obs, act].
func normalize64(n *models.Normalizer, obs, act []float32) []float64 {
	x := make([]float64, 0, len(obs)+len(act))
	for _, v := range obs {
		x = append(x, float64(v))
	}
	for _, v := range act {
		x = append(x, float64(v))
	}
	for i := range x {
		x[i] = (x[i] - float64(n.Mean[i])) / float64(n.Std[i])
	}
	return x
}

// gruCell is one PyTorch GRU step (gate order r, z, n).
func gruCell(g *models.GRULayer, x, h []float64) []float64 {
	H := g.Hidden
	gi := make([]float64, 3*H)
	gh := make([]float64, 3*H)
	for c := 0; c < 3*H; c++ {
		s := float64(g.Bi[c])
		for i := 0; i < g.In; i++ {
			s += x[i] * float64(g.Wi[i*3*H+c])
		}
		gi[c] = s
		s = float64(g.Bh[c])
		for i := 0; i < H; i++ {
			s += h[i] * float64(g.Wh[i*3*H+c])
		}
		gh[c] = s
	}
	out := make([]float64, H)
	for j := 0; j < H; j++ {
		r := sigmoid64(gi[j] + gh[j])
		z := sigmoid64(gi[H+j] + gh[H+j])
		n := math.Tanh(gi[2*H+j] + r*gh[2*H+j])
		out[j] = (1-z)*n + z*h[j]
	}
	return out
}

// layerNorm64 uses the population variance.
func layerNorm64(n *models.LayerNorm, x []float64) []float64 {
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var vr float64
	for _, v := range x {
		vr += (v - mean) * (v - mean)
	}
	vr /= float64(len(x))
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)/math.Sqrt(vr+float64(n.Eps))*float64(n.Gamma[i]) + float64(n.Beta[i])
	}
	return y
}

// admRef is the ADM's prediction for start state s and the actions of a
// k-step plan: the mean next state s + delta, the mean reward and the
// soft-clamped log-variance of [next obs, reward].
func admRef(a *models.ADM, s []float32, acts [][]float32) (next []float64, rew float64, lv []float64) {
	return admRefDrop(a, s, acts, nil)
}

// admRefDrop is admRef with MC dropout in the ResBlocks: mult[b] holds
// block b's multipliers of Swish(x·W + b) (0 for a dropped unit, 1/(1-p)
// for a kept one); nil mult is no dropout.
func admRefDrop(a *models.ADM, s []float32, acts [][]float32, mult [][]float64) (next []float64, rew float64, lv []float64) {
	hs := make([][]float64, len(a.GRU))
	for l := range hs {
		hs[l] = make([]float64, a.Cfg.Hidden)
	}
	var x []float64
	for _, act := range acts {
		x = normalize64(&a.Norm, s, act)
		for l := range a.GRU {
			hs[l] = gruCell(&a.GRU[l], x, hs[l])
			x = hs[l]
		}
	}
	for b := range a.Blocks {
		y := linear64(&a.Blocks[b].Lin, x)
		for i, v := range y {
			sw := v * sigmoid64(v)
			if mult != nil {
				sw *= mult[b][i]
			}
			y[i] = x[i] + sw
		}
		x = layerNorm64(&a.Blocks[b].Norm, y)
	}
	o := linear64(&a.Out, x)
	d := a.Cfg.ObsDim + 1
	next = make([]float64, a.Cfg.ObsDim)
	for i := range next {
		next[i] = float64(s[i]) + o[i]
	}
	return next, o[d-1], softClamp(&a.Bounds, o[d:])
}

// memberRef is ensemble member k's mean of [delta, reward] and its
// soft-clamped log-variance.
func memberRef(e *models.Ensemble, k int, obs, act []float32) (mean, lv []float64) {
	x := normalize64(&e.Norm, obs, act)
	layers := e.Members[k].Layers
	for i := range layers {
		x = linear64(&layers[i], x)
		if i+1 < len(layers) {
			for j, v := range x {
				x[j] = v * sigmoid64(v)
			}
		}
	}
	d := e.ObsDim + 1
	return x[:d], softClamp(&e.Bounds[k], x[d:])
}

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
