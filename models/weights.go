package models

import (
	"fmt"
	"math"
	"math/rand"
)

// Linear is a dense layer y = x·W + B with W of shape [In, Out], row-major.
type Linear struct {
	In, Out int
	W       []float32 // [In*Out]
	B       []float32 // [Out]
}

// NewLinear returns a layer initialised as PyTorch does: W and B uniform in
// ±1/sqrt(In).
func NewLinear(in, out int, rng *rand.Rand) Linear {
	l := Linear{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
	bound := 1 / math.Sqrt(float64(in))
	fillUniform(l.W, bound, rng)
	fillUniform(l.B, bound, rng)
	return l
}

// LayerNorm normalises over its last dimension: y = (x-mean)/sqrt(var+Eps)*Gamma + Beta,
// with the population variance.
type LayerNorm struct {
	Dim         int
	Gamma, Beta []float32 // [Dim]
	Eps         float32
}

// NewLayerNorm returns a LayerNorm with Gamma = 1, Beta = 0 and Eps = 1e-5.
func NewLayerNorm(dim int) LayerNorm {
	n := LayerNorm{Dim: dim, Gamma: make([]float32, dim), Beta: make([]float32, dim), Eps: 1e-5}
	for i := range n.Gamma {
		n.Gamma[i] = 1
	}
	return n
}

// ResBlock is y = LayerNorm(x + Dropout(Swish(x·W + b))), with Swish(v) = v·sigmoid(v).
// Dropout acts only in training.
type ResBlock struct {
	Lin  Linear
	Norm LayerNorm
}

// GRULayer is one GRU layer with PyTorch's equations and gate order (r, z, n):
//
//	r  = σ(x·Wi[:,r] + Bi[r] + h·Wh[:,r] + Bh[r])
//	z  = σ(x·Wi[:,z] + Bi[z] + h·Wh[:,z] + Bh[z])
//	n  = tanh(x·Wi[:,n] + Bi[n] + r ⊙ (h·Wh[:,n] + Bh[n]))
//	h' = (1-z) ⊙ n + z ⊙ h
//
// Wi has shape [In, 3·Hidden] and Wh [Hidden, 3·Hidden]; columns [0,H) are r,
// [H,2H) are z, [2H,3H) are n.
type GRULayer struct {
	In, Hidden int
	Wi, Wh     []float32
	Bi, Bh     []float32 // [3·Hidden]
}

// NewGRULayer initialises all weights uniform in ±1/sqrt(hidden), as PyTorch does.
func NewGRULayer(in, hidden int, rng *rand.Rand) GRULayer {
	g := GRULayer{In: in, Hidden: hidden,
		Wi: make([]float32, in*3*hidden), Wh: make([]float32, hidden*3*hidden),
		Bi: make([]float32, 3*hidden), Bh: make([]float32, 3*hidden)}
	b := 1 / math.Sqrt(float64(hidden))
	for _, s := range [][]float32{g.Wi, g.Wh, g.Bi, g.Bh} {
		fillUniform(s, b, rng)
	}
	return g
}

// Normalizer z-scores inputs: (x - Mean) / Std.
type Normalizer struct {
	Mean, Std []float32
}

// NewNormalizer returns the identity normaliser of the given dimension.
func NewNormalizer(dim int) Normalizer {
	n := Normalizer{Mean: make([]float32, dim), Std: make([]float32, dim)}
	for i := range n.Std {
		n.Std[i] = 1
	}
	return n
}

// LogVarBounds are the learnable soft bounds on a Gaussian head's log-variance:
//
//	lv = Max - softplus(Max - lv); lv = Min + softplus(lv - Min)
type LogVarBounds struct {
	Max, Min []float32 // [Dim]; initialised to 0.5 and -10
}

// NewLogVarBounds returns bounds initialised to Max = 0.5, Min = -10.
func NewLogVarBounds(dim int) LogVarBounds {
	b := LogVarBounds{Max: make([]float32, dim), Min: make([]float32, dim)}
	for i := range b.Max {
		b.Max[i], b.Min[i] = 0.5, -10
	}
	return b
}

// ADMConfig sizes an Any-step Dynamics Model.
type ADMConfig struct {
	ObsDim, ActDim int
	Hidden         int // GRU width and ResBlock width (200; 400 for Ant/Humanoid)
	Layers         int // stacked GRU layers (3)
	ResBlocks      int // ResBlocks in the head (4)
	M              int // maximum backtracking length m
}

// DefaultADMConfig is the paper's reference size: 3 GRU layers x 200, 4 ResBlocks.
func DefaultADMConfig(obsDim, actDim, m int) ADMConfig {
	return ADMConfig{ObsDim: obsDim, ActDim: actDim, Hidden: 200, Layers: 3, ResBlocks: 4, M: m}
}

// ADM is the Any-step Dynamics Model. For a start state s and actions
// a_1..a_k the GRU reads k inputs norm([s, a_j]); its top-layer output after
// step k goes through the ResBlocks and Out, giving 2·(ObsDim+1) values: the
// mean of [s_{t+k} - s_t, r_{t+k}] followed by the raw log-variance, which is
// soft-clamped by Bounds.
type ADM struct {
	Cfg    ADMConfig
	Norm   Normalizer // over [obs, act], dim ObsDim+ActDim
	GRU    []GRULayer // GRU[0].In = ObsDim+ActDim, others Hidden
	Blocks []ResBlock
	Out    Linear // Hidden -> 2·(ObsDim+1)
	Bounds LogVarBounds
}

// NewADM returns a freshly initialised ADM.
func NewADM(cfg ADMConfig, rng *rand.Rand) (*ADM, error) {
	if cfg.ObsDim <= 0 || cfg.ActDim <= 0 || cfg.Hidden <= 0 || cfg.Layers <= 0 || cfg.ResBlocks < 0 || cfg.M <= 0 {
		return nil, fmt.Errorf("models: invalid ADM config %+v", cfg)
	}
	in := cfg.ObsDim + cfg.ActDim
	m := &ADM{Cfg: cfg, Norm: NewNormalizer(in), Bounds: NewLogVarBounds(cfg.ObsDim + 1)}
	for l := 0; l < cfg.Layers; l++ {
		li := cfg.Hidden
		if l == 0 {
			li = in
		}
		m.GRU = append(m.GRU, NewGRULayer(li, cfg.Hidden, rng))
	}
	for b := 0; b < cfg.ResBlocks; b++ {
		m.Blocks = append(m.Blocks, ResBlock{Lin: NewLinear(cfg.Hidden, cfg.Hidden, rng), Norm: NewLayerNorm(cfg.Hidden)})
	}
	m.Out = NewLinear(cfg.Hidden, 2*(cfg.ObsDim+1), rng)
	return m, nil
}

// MLP is a stack of Linear layers with an activation ("relu" or "swish")
// after every layer but the last.
type MLP struct {
	Layers     []Linear
	Activation string
}

// NewMLP builds an MLP with the given layer sizes, e.g. [in, 256, 256, out].
func NewMLP(sizes []int, activation string, rng *rand.Rand) MLP {
	m := MLP{Activation: activation}
	for i := 0; i+1 < len(sizes); i++ {
		m.Layers = append(m.Layers, NewLinear(sizes[i], sizes[i+1], rng))
	}
	return m
}

// Actor is SAC's tanh-squashed Gaussian policy. Net maps an observation to
// 2·ActDim values: the mean u and a raw log-std t, rescaled into
// [LogStdMin, LogStdMax] as logstd = LogStdMin + 0.5·(LogStdMax-LogStdMin)·(tanh(t)+1).
// An action is Scale ⊙ tanh(u + exp(logstd) ⊙ ε) + Bias, with ε ~ N(0, I)
// (ε = 0 for the deterministic action).
type Actor struct {
	ObsDim, ActDim       int
	Net                  MLP // ReLU, [ObsDim, 256, 256, 2·ActDim]
	LogStdMin, LogStdMax float32
	Scale, Bias          []float32 // [ActDim], from the action bounds
}

// NewActor returns a 256x256 ReLU actor for actions in [low, high].
func NewActor(obsDim int, low, high []float64, hidden []int, rng *rand.Rand) *Actor {
	actDim := len(low)
	sizes := append(append([]int{obsDim}, hidden...), 2*actDim)
	a := &Actor{ObsDim: obsDim, ActDim: actDim, Net: NewMLP(sizes, "relu", rng),
		LogStdMin: -5, LogStdMax: 2, Scale: make([]float32, actDim), Bias: make([]float32, actDim)}
	for i := range low {
		a.Scale[i] = float32((high[i] - low[i]) / 2)
		a.Bias[i] = float32((high[i] + low[i]) / 2)
	}
	return a
}

// Critic is a Q-network: Net maps [obs, act] to one value.
type Critic struct {
	ObsDim, ActDim int
	Net            MLP // ReLU, [ObsDim+ActDim, 256, 256, 1]
}

// NewCritic returns a 256x256 ReLU critic.
func NewCritic(obsDim, actDim int, hidden []int, rng *rand.Rand) *Critic {
	sizes := append(append([]int{obsDim + actDim}, hidden...), 1)
	return &Critic{ObsDim: obsDim, ActDim: actDim, Net: NewMLP(sizes, "relu", rng)}
}

// Ensemble is MBPO's probabilistic ensemble. Each member is a Swish MLP
// [ObsDim+ActDim, 200, 200, 200, 200, 2·(ObsDim+1)] over normalised [obs, act]
// predicting the mean of [s' - s, r] and a raw log-variance soft-clamped by
// that member's Bounds. Elites lists the member indices used for roll-outs.
type Ensemble struct {
	ObsDim, ActDim int
	Norm           Normalizer
	Members        []MLP
	Bounds         []LogVarBounds
	Elites         []int
}

// NewEnsemble returns n members of the given hidden sizes, all of them elites.
func NewEnsemble(obsDim, actDim, n int, hidden []int, rng *rand.Rand) *Ensemble {
	e := &Ensemble{ObsDim: obsDim, ActDim: actDim, Norm: NewNormalizer(obsDim + actDim)}
	sizes := append(append([]int{obsDim + actDim}, hidden...), 2*(obsDim+1))
	for i := 0; i < n; i++ {
		e.Members = append(e.Members, NewMLP(sizes, "swish", rng))
		e.Bounds = append(e.Bounds, NewLogVarBounds(obsDim+1))
		e.Elites = append(e.Elites, i)
	}
	return e
}

func fillUniform(s []float32, bound float64, rng *rand.Rand) {
	for i := range s {
		s[i] = float32((2*rng.Float64() - 1) * bound)
	}
}
