package onnx

import (
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

// Graph fragments shared by the exporters.

// obsActInputs declares the inputs obs [batch, obsDim] and act [batch,
// actDim] and returns their concatenation [batch, obsDim+actDim].
func obsActInputs(g *Graph, obsDim, actDim int) string {
	obs := g.Input(schema.Obs, Float, Batch, Fixed(obsDim))
	act := g.Input(schema.Act, Float, Batch, Fixed(actDim))
	return g.Op("Concat", []string{obs, act}, AttrInt("axis", 1))
}

// cols returns columns [from, to) of a row-major [in, out] matrix.
func cols(w []float32, in, out, from, to int) []float32 {
	c := make([]float32, 0, in*(to-from))
	for i := 0; i < in; i++ {
		c = append(c, w[i*out+from:i*out+to]...)
	}
	return c
}

// rows returns rows [from, to) of a row-major [in, out] matrix.
func rows(w []float32, out, from, to int) []float32 {
	return append([]float32(nil), w[from*out:to*out]...)
}

// gemm adds y = x·W + b for x [N, in] with W [in, out] and b [out] (or a
// value name c broadcastable to [N, out] when bias is nil).
func gemm(g *Graph, x, prefix string, w []float32, in, out int, bias []float32, c string) string {
	wn := g.Float(prefix+"_W", []int64{int64(in), int64(out)}, w)
	if bias != nil {
		c = g.Float(prefix+"_B", []int64{int64(out)}, bias)
	}
	return g.Op("Gemm", []string{x, wn, c})
}

// linearCols applies the output columns [from, to) of l to x [N, l.In].
func linearCols(g *Graph, x, prefix string, l *models.Linear, from, to int) string {
	return gemm(g, x, prefix, cols(l.W, l.In, l.Out, from, to), l.In, to-from, l.B[from:to], "")
}

// linear applies l to x [N, l.In].
func linear(g *Graph, x, prefix string, l *models.Linear) string {
	return linearCols(g, x, prefix, l, 0, l.Out)
}

// swish is x·sigmoid(x).
func swish(g *Graph, x string) string {
	return g.Op("Mul", []string{x, g.Op("Sigmoid", []string{x})})
}

// activate applies "relu" or "swish" (checked by checkMLP).
func activate(g *Graph, x, activation string) string {
	if activation == "swish" {
		return swish(g, x)
	}
	return g.Op("Relu", []string{x})
}

// mlpHidden applies every layer of m but the last, each followed by the
// activation, to x [N, in] and returns the last hidden activation.
func mlpHidden(g *Graph, x, prefix string, m *models.MLP) string {
	for i := 0; i+1 < len(m.Layers); i++ {
		x = activate(g, linear(g, x, prefix, &m.Layers[i]), m.Activation)
	}
	return x
}

// normalize z-scores x with per-feature mean and std of the last dimension.
func normalize(g *Graph, x string, mean, std []float32) string {
	d := []int64{int64(len(mean))}
	m := g.Float("norm_mean", d, mean)
	s := g.Float("norm_std", d, std)
	return g.Op("Div", []string{g.Op("Sub", []string{x, m}), s})
}

// softClamp applies lv = max - softplus(max - lv); lv = min + softplus(lv - min)
// with bounds of shape dims (broadcast against lv).
func softClamp(g *Graph, lv string, dims []int64, max, min []float32) string {
	mx := g.Float("logvar_max", dims, max)
	mn := g.Float("logvar_min", dims, min)
	lv = g.Op("Sub", []string{mx, g.Op("Softplus", []string{g.Op("Sub", []string{mx, lv})})})
	return g.Op("Add", []string{mn, g.Op("Softplus", []string{g.Op("Sub", []string{lv, mn})})})
}

// resBlock is LayerNorm(x + Swish(x·W + b)) on x [N, H]; with a dropout
// multiplier mask [N, H] (not ""), LayerNorm(x + mask ⊙ Swish(x·W + b)).
func resBlock(g *Graph, x string, b *models.ResBlock, mask string) string {
	y := swish(g, linear(g, x, "res", &b.Lin))
	if mask != "" {
		y = g.Op("Mul", []string{y, mask})
	}
	y = g.Op("Add", []string{x, y})
	d := []int64{int64(b.Norm.Dim)}
	gamma := g.Float("ln_gamma", d, b.Norm.Gamma)
	beta := g.Float("ln_beta", d, b.Norm.Beta)
	return g.Op("LayerNormalization", []string{y, gamma, beta},
		AttrInt("axis", -1), AttrFloat("epsilon", b.Norm.Eps))
}

// int64s adds a 1-D int64 constant.
func int64s(g *Graph, prefix string, v ...int64) string {
	return g.Int64s(prefix, []int64{int64(len(v))}, v)
}
