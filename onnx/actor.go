package onnx

import (
	"strconv"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

// ExportActor writes a SAC actor as an ONNX model with inputs obs
// [batch, obs_dim] and noise [batch, act_dim] and outputs
//
//	action      = Scale·tanh(u + exp(logstd)·noise) + Bias
//	mean_action = Scale·tanh(u) + Bias
//
// where u and the raw log-std t are the two halves of Net's output and
// logstd = LogStdMin + 0.5·(LogStdMax-LogStdMin)·(tanh(t)+1). Zero noise gives
// the deterministic action. The graph uses only Gemm, Relu, Tanh, Exp, Mul
// and Add, so onnx-go can run it too.
func ExportActor(a *models.Actor, meta map[string]string) ([]byte, error) {
	return export("actor", checkActor(a), "admpo_actor", "SAC tanh-squashed Gaussian policy", meta,
		func(g *Graph) map[string]string { return actorGraph(g, a) })
}

// actorGraph builds a's graph in g and returns its metadata.
func actorGraph(g *Graph, a *models.Actor) map[string]string {
	obs := g.Input(schema.Obs, Float, Batch, Fixed(a.ObsDim))
	noise := g.Input(schema.Noise, Float, Batch, Fixed(a.ActDim))

	h := mlpHidden(g, obs, "actor", &a.Net)
	last := &a.Net.Layers[len(a.Net.Layers)-1]
	u := linearCols(g, h, "actor_mean", last, 0, a.ActDim)
	t := linearCols(g, h, "actor_logstd", last, a.ActDim, 2*a.ActDim)

	half := 0.5 * (float64(a.LogStdMax) - float64(a.LogStdMin))
	logstd := g.Op("Add", []string{
		g.Scalar("logstd_mid", float32(float64(a.LogStdMin)+half)),
		g.Op("Mul", []string{g.Scalar("logstd_half", float32(half)), g.Op("Tanh", []string{t})}),
	})
	pre := g.Op("Add", []string{u, g.Op("Mul", []string{g.Op("Exp", []string{logstd}), noise})})

	d := []int64{int64(a.ActDim)}
	scale := g.Float("action_scale", d, a.Scale)
	bias := g.Float("action_bias", d, a.Bias)
	squash := func(x string) string {
		return g.Op("Add", []string{g.Op("Mul", []string{scale, g.Op("Tanh", []string{x})}), bias})
	}
	g.Output(squash(pre), schema.Action, Float, Batch, Fixed(a.ActDim))
	g.Output(squash(u), schema.MeanAction, Float, Batch, Fixed(a.ActDim))

	return map[string]string{
		schema.MetaModel:     schema.KindActor,
		schema.MetaObsDim:    strconv.Itoa(a.ObsDim),
		schema.MetaActDim:    strconv.Itoa(a.ActDim),
		schema.MetaScale:     JoinFloats(a.Scale),
		schema.MetaBias:      JoinFloats(a.Bias),
		schema.MetaLogStdMin: JoinFloats([]float32{a.LogStdMin}),
		schema.MetaLogStdMax: JoinFloats([]float32{a.LogStdMax}),
	}
}
