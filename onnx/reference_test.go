package onnx_test

import (
	"math"

	"github.com/admpo/admpo/models"
)

// A naive float64 forward pass of every exported network, written from the
// doc comments in models/weights.go and the reference facts (NOTES.md) and
// sharing no code with the exporter.

func refLinear(x []float64, l *models.Linear) []float64 {
	y := make([]float64, l.Out)
	for j := 0; j < l.Out; j++ {
		s := float64(l.B[j])
		for i := 0; i < l.In; i++ {
			s += x[i] * float64(l.W[i*l.Out+j])
		}
		y[j] = s
	}
	return y
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

func softplus(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

func refActivate(x []float64, act string) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		switch act {
		case "relu":
			y[i] = math.Max(v, 0)
		case "swish":
			y[i] = v * sigmoid(v)
		default:
			panic("unknown activation " + act)
		}
	}
	return y
}

func refMLP(x []float64, m *models.MLP) []float64 {
	for i := range m.Layers {
		x = refLinear(x, &m.Layers[i])
		if i+1 < len(m.Layers) {
			x = refActivate(x, m.Activation)
		}
	}
	return x
}

// refActor returns Scale·tanh(u + exp(logstd)·noise) + Bias and the
// deterministic Scale·tanh(u) + Bias.
func refActor(a *models.Actor, obs, noise []float64) (action, mean []float64) {
	out := refMLP(obs, &a.Net)
	action = make([]float64, a.ActDim)
	mean = make([]float64, a.ActDim)
	for i := 0; i < a.ActDim; i++ {
		u, t := out[i], out[a.ActDim+i]
		logstd := float64(a.LogStdMin) + 0.5*float64(a.LogStdMax-a.LogStdMin)*(math.Tanh(t)+1)
		action[i] = float64(a.Scale[i])*math.Tanh(u+math.Exp(logstd)*noise[i]) + float64(a.Bias[i])
		mean[i] = float64(a.Scale[i])*math.Tanh(u) + float64(a.Bias[i])
	}
	return action, mean
}

func refCritic(c *models.Critic, obs, act []float64) float64 {
	x := append(append([]float64(nil), obs...), act...)
	return refMLP(x, &c.Net)[0]
}

func refNormalize(x []float64, n *models.Normalizer) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		y[i] = (x[i] - float64(n.Mean[i])) / float64(n.Std[i])
	}
	return y
}

// refGRUStep is PyTorch's GRU cell with gate blocks r, z, n.
func refGRUStep(l *models.GRULayer, x, h []float64) []float64 {
	H := l.Hidden
	gi := make([]float64, 3*H)
	gh := make([]float64, 3*H)
	for c := 0; c < 3*H; c++ {
		si, sh := float64(l.Bi[c]), float64(l.Bh[c])
		for i := 0; i < l.In; i++ {
			si += x[i] * float64(l.Wi[i*3*H+c])
		}
		for i := 0; i < H; i++ {
			sh += h[i] * float64(l.Wh[i*3*H+c])
		}
		gi[c], gh[c] = si, sh
	}
	out := make([]float64, H)
	for i := 0; i < H; i++ {
		r := sigmoid(gi[i] + gh[i])
		z := sigmoid(gi[H+i] + gh[H+i])
		n := math.Tanh(gi[2*H+i] + r*gh[2*H+i])
		out[i] = (1-z)*n + z*h[i]
	}
	return out
}

func refLayerNorm(x []float64, n *models.LayerNorm) []float64 {
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	vr := 0.0
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

func refResBlock(x []float64, b *models.ResBlock) []float64 {
	y := refActivate(refLinear(x, &b.Lin), "swish")
	for i := range y {
		y[i] += x[i]
	}
	return refLayerNorm(y, &b.Norm)
}

func refSoftClamp(lv []float64, b *models.LogVarBounds) []float64 {
	y := make([]float64, len(lv))
	for i, v := range lv {
		mx, mn := float64(b.Max[i]), float64(b.Min[i])
		v = mx - softplus(mx-v)
		y[i] = mn + softplus(v-mn)
	}
	return y
}

// refADMHead maps a top GRU output to (mean of [delta, r], clamped logvar).
func refADMHead(m *models.ADM, h []float64) (mean, logvar []float64) {
	for i := range m.Blocks {
		h = refResBlock(h, &m.Blocks[i])
	}
	out := refLinear(h, &m.Out)
	d := m.Cfg.ObsDim + 1
	return out[:d], refSoftClamp(out[d:], &m.Bounds)
}

// refADM runs the start state obs with actions acts[0..len-1] and returns
// the head's mean and logvar after every step.
func refADM(m *models.ADM, obs []float64, acts [][]float64) (means, logvars [][]float64) {
	hs := make([][]float64, len(m.GRU))
	for l := range hs {
		hs[l] = make([]float64, m.Cfg.Hidden)
	}
	for _, a := range acts {
		x := refNormalize(append(append([]float64(nil), obs...), a...), &m.Norm)
		for l := range m.GRU {
			hs[l] = refGRUStep(&m.GRU[l], x, hs[l])
			x = hs[l]
		}
		mu, lv := refADMHead(m, x)
		means = append(means, mu)
		logvars = append(logvars, lv)
	}
	return means, logvars
}

// refEnsemble returns every member's mean and clamped logvar.
func refEnsemble(e *models.Ensemble, obs, act []float64) (means, logvars [][]float64) {
	x := refNormalize(append(append([]float64(nil), obs...), act...), &e.Norm)
	d := e.ObsDim + 1
	for i := range e.Members {
		out := refMLP(x, &e.Members[i])
		means = append(means, out[:d])
		logvars = append(logvars, refSoftClamp(out[d:], &e.Bounds[i]))
	}
	return means, logvars
}
