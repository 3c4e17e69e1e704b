package testfix

import (
	"math"

	"github.com/admpo/admpo/models"
)

// The float64 reference of admpo's networks: plain-Go forward passes written
// from the equations documented in models/weights.go, sharing no code with
// models/forward.go or the ONNX exporter, so that their results can be
// checked against it.

// F64 returns v converted to float64.
func F64(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(x)
	}
	return r
}

// Linear is y = x·W + B with W [In, Out] row-major.
func Linear(l *models.Linear, x []float64) []float64 {
	y := make([]float64, l.Out)
	for o := range y {
		s := float64(l.B[o])
		for i := 0; i < l.In; i++ {
			s += x[i] * float64(l.W[i*l.Out+o])
		}
		y[o] = s
	}
	return y
}

// Sigmoid is 1 / (1 + exp(-v)).
func Sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// Softplus is log(1 + exp(v)), computed without overflow.
func Softplus(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

// activate applies "relu" or "swish" (v·sigmoid(v)) elementwise; any other
// name is a broken test and panics.
func activate(x []float64, act string) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		switch act {
		case "relu":
			y[i] = math.Max(v, 0)
		case "swish":
			y[i] = v * Sigmoid(v)
		default:
			panic("testfix: unknown activation " + act)
		}
	}
	return y
}

// MLP runs m's layers with its activation after every layer but the last.
func MLP(m *models.MLP, x []float64) []float64 {
	for i := range m.Layers {
		x = Linear(&m.Layers[i], x)
		if i+1 < len(m.Layers) {
			x = activate(x, m.Activation)
		}
	}
	return x
}

// Normalize z-scores x: (x - Mean) / Std.
func Normalize(n *models.Normalizer, x []float64) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		y[i] = (x[i] - float64(n.Mean[i])) / float64(n.Std[i])
	}
	return y
}

// concat returns [a, b] as a new slice.
func concat(a, b []float64) []float64 {
	return append(append(make([]float64, 0, len(a)+len(b)), a...), b...)
}

// GRUStep is one PyTorch GRU step from hidden state h (gate order r, z, n).
func GRUStep(g *models.GRULayer, x, h []float64) []float64 {
	H := g.Hidden
	gi := make([]float64, 3*H)
	gh := make([]float64, 3*H)
	for c := 0; c < 3*H; c++ {
		si, sh := float64(g.Bi[c]), float64(g.Bh[c])
		for i := 0; i < g.In; i++ {
			si += x[i] * float64(g.Wi[i*3*H+c])
		}
		for i := 0; i < H; i++ {
			sh += h[i] * float64(g.Wh[i*3*H+c])
		}
		gi[c], gh[c] = si, sh
	}
	out := make([]float64, H)
	for j := range out {
		r := Sigmoid(gi[j] + gh[j])
		z := Sigmoid(gi[H+j] + gh[H+j])
		n := math.Tanh(gi[2*H+j] + r*gh[2*H+j])
		out[j] = (1-z)*n + z*h[j]
	}
	return out
}

// LayerNorm is (x-mean)/sqrt(var+Eps)·Gamma + Beta with the population
// variance.
func LayerNorm(n *models.LayerNorm, x []float64) []float64 {
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

// ResBlock is LayerNorm(x + mult ⊙ Swish(x·W + b)); mult holds MC dropout's
// multipliers (0 for a dropped unit, 1/(1-p) for a kept one), nil for none.
func ResBlock(b *models.ResBlock, x, mult []float64) []float64 {
	y := activate(Linear(&b.Lin, x), "swish")
	for i := range y {
		if mult != nil {
			y[i] *= mult[i]
		}
		y[i] += x[i]
	}
	return LayerNorm(&b.Norm, y)
}

// SoftClamp is lv = Max - softplus(Max - lv); lv = Min + softplus(lv - Min).
func SoftClamp(b *models.LogVarBounds, lv []float64) []float64 {
	y := make([]float64, len(lv))
	for i, v := range lv {
		mx, mn := float64(b.Max[i]), float64(b.Min[i])
		v = mx - Softplus(mx-v)
		y[i] = mn + Softplus(v-mn)
	}
	return y
}

// ADMHidden returns the ADM's zero hidden state, one slice per GRU layer.
func ADMHidden(m *models.ADM) [][]float64 {
	hs := make([][]float64, len(m.GRU))
	for l := range hs {
		hs[l] = make([]float64, m.Cfg.Hidden)
	}
	return hs
}

// ADMStep feeds norm([obs, act]) through the GRU layers from hidden state
// hs, replaces hs[l] by each layer's new state and returns the top layer's.
func ADMStep(m *models.ADM, hs [][]float64, obs, act []float64) []float64 {
	x := Normalize(&m.Norm, concat(obs, act))
	for l := range m.GRU {
		hs[l] = GRUStep(&m.GRU[l], x, hs[l])
		x = hs[l]
	}
	return x
}

// ADMHead maps a top GRU output through the ResBlocks and Out to the mean
// of [delta, reward] and the soft-clamped log-variance. mult[b] holds block
// b's dropout multipliers (see ResBlock); nil mult is no dropout.
func ADMHead(m *models.ADM, h []float64, mult [][]float64) (mean, logvar []float64) {
	for b := range m.Blocks {
		var mb []float64
		if mult != nil {
			mb = mult[b]
		}
		h = ResBlock(&m.Blocks[b], h, mb)
	}
	out := Linear(&m.Out, h)
	d := m.Cfg.ObsDim + 1
	return out[:d], SoftClamp(&m.Bounds, out[d:])
}

// ADM runs start state obs with the actions acts and returns the head's
// mean of [delta, reward] and clamped log-variance after every step.
func ADM(m *models.ADM, obs []float64, acts [][]float64) (means, logvars [][]float64) {
	hs := ADMHidden(m)
	for _, a := range acts {
		mu, lv := ADMHead(m, ADMStep(m, hs, obs, a), nil)
		means = append(means, mu)
		logvars = append(logvars, lv)
	}
	return means, logvars
}

// ADMPredict is the ADM's prediction for start state s after the actions of
// a k-step plan, with dropout multipliers mult as in ADMHead: the mean next
// state s + delta, the mean reward and the clamped log-variance.
func ADMPredict(m *models.ADM, s []float32, acts [][]float32, mult [][]float64) (next []float64, rew float64, logvar []float64) {
	obs := F64(s)
	hs := ADMHidden(m)
	var h []float64
	for _, a := range acts {
		h = ADMStep(m, hs, obs, F64(a))
	}
	mean, logvar := ADMHead(m, h, mult)
	next = make([]float64, m.Cfg.ObsDim)
	for i := range next {
		next[i] = obs[i] + mean[i]
	}
	return next, mean[m.Cfg.ObsDim], logvar
}

// EnsembleMember is member k's mean of [delta, reward] and its clamped
// log-variance for [obs, act].
func EnsembleMember(e *models.Ensemble, k int, obs, act []float64) (mean, logvar []float64) {
	out := MLP(&e.Members[k], Normalize(&e.Norm, concat(obs, act)))
	d := e.ObsDim + 1
	return out[:d], SoftClamp(&e.Bounds[k], out[d:])
}

// Critic is c's Q-value of [obs, act].
func Critic(c *models.Critic, obs, act []float64) float64 {
	return MLP(&c.Net, concat(obs, act))[0]
}

// Actor is a's action for one observation, Scale·tanh(u + exp(logstd)·noise)
// + Bias, and its deterministic action Scale·tanh(u) + Bias; with noise nil
// both are the deterministic one.
func Actor(a *models.Actor, obs, noise []float64) (action, mean []float64) {
	out := MLP(&a.Net, obs)
	lo, hi := float64(a.LogStdMin), float64(a.LogStdMax)
	action = make([]float64, a.ActDim)
	mean = make([]float64, a.ActDim)
	for j := range action {
		u := out[j]
		mean[j] = float64(a.Scale[j])*math.Tanh(u) + float64(a.Bias[j])
		action[j] = mean[j]
		if noise != nil {
			logstd := lo + 0.5*(hi-lo)*(math.Tanh(out[a.ActDim+j])+1)
			action[j] = float64(a.Scale[j])*math.Tanh(u+math.Exp(logstd)*noise[j]) + float64(a.Bias[j])
		}
	}
	return action, mean
}
