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

// ExportCritic writes a Q-network as an ONNX model with inputs obs
// [batch, obs_dim] and act [batch, act_dim] and output q [batch, 1] =
// Net([obs, act]).
func ExportCritic(c *models.Critic, meta map[string]string) ([]byte, error) {
	return export("critic", checkCritic(c), "admpo_critic", "SAC Q-network", meta,
		func(g *Graph) map[string]string { return criticGraph(g, c) })
}

// criticGraph builds c's graph in g and returns its metadata.
func criticGraph(g *Graph, c *models.Critic) map[string]string {
	h := mlpHidden(g, obsActInputs(g, c.ObsDim, c.ActDim), "critic", &c.Net)
	q := linear(g, h, "critic_out", &c.Net.Layers[len(c.Net.Layers)-1])
	g.Output(q, schema.Q, Float, Batch, Fixed(1))
	return map[string]string{
		schema.MetaModel:  schema.KindCritic,
		schema.MetaObsDim: strconv.Itoa(c.ObsDim),
		schema.MetaActDim: strconv.Itoa(c.ActDim),
	}
}

// ExportEnsemble writes all members of a probabilistic ensemble into one
// ONNX graph: inputs obs [batch, obs_dim] and act [batch, act_dim]; outputs
// mean [members, batch, obs_dim+1] (of [s'-s, r]) and logvar (soft-clamped by
// each member's bounds), computed with MatMuls batched over the member axis.
func ExportEnsemble(e *models.Ensemble, meta map[string]string) ([]byte, error) {
	return export("ensemble", checkEnsemble(e), "admpo_ensemble", "probabilistic dynamics ensemble (MBPO/MOPO)", meta,
		func(g *Graph) map[string]string { return ensembleGraph(g, e) })
}

// ensembleGraph builds e's graph in g and returns its metadata.
func ensembleGraph(g *Graph, e *models.Ensemble) map[string]string {
	n := len(e.Members)
	d := e.ObsDim + 1
	x := normalize(g, obsActInputs(g, e.ObsDim, e.ActDim), e.Norm.Mean, e.Norm.Std)

	// member-stacked dense layer on columns [from, to): x [members or 1, batch, in]
	dense := func(x string, j, from, to int) string {
		in := e.Members[0].Layers[j].In
		w := make([]float32, 0, n*in*(to-from))
		b := make([]float32, 0, n*(to-from))
		for i := range e.Members {
			l := &e.Members[i].Layers[j]
			w = append(w, cols(l.W, l.In, l.Out, from, to)...)
			b = append(b, l.B[from:to]...)
		}
		wn := g.Float("ens_W", []int64{int64(n), int64(in), int64(to - from)}, w)
		bn := g.Float("ens_B", []int64{int64(n), 1, int64(to - from)}, b)
		return g.Op("Add", []string{g.Op("MatMul", []string{x, wn}), bn})
	}
	layers := len(e.Members[0].Layers)
	var widths []int
	for j := 0; j+1 < layers; j++ {
		x = activate(g, dense(x, j, 0, e.Members[0].Layers[j].Out), e.Members[0].Activation)
		widths = append(widths, e.Members[0].Layers[j].Out)
	}
	mean := dense(x, layers-1, 0, d)
	lv := dense(x, layers-1, d, 2*d)
	maxs := make([]float32, 0, n*d)
	mins := make([]float32, 0, n*d)
	for i := range e.Bounds {
		maxs = append(maxs, e.Bounds[i].Max...)
		mins = append(mins, e.Bounds[i].Min...)
	}
	lv = softClamp(g, lv, []int64{int64(n), 1, int64(d)}, maxs, mins)
	g.Output(mean, schema.Mean, Float, Fixed(n), Batch, Fixed(d))
	g.Output(lv, schema.LogVar, Float, Fixed(n), Batch, Fixed(d))

	return map[string]string{
		schema.MetaModel:    schema.KindEnsemble,
		schema.MetaObsDim:   strconv.Itoa(e.ObsDim),
		schema.MetaActDim:   strconv.Itoa(e.ActDim),
		schema.MetaMembers:  strconv.Itoa(n),
		schema.MetaElites:   joinInts(e.Elites),
		schema.MetaHidden:   joinInts(widths),
		schema.MetaNormMean: JoinFloats(e.Norm.Mean),
		schema.MetaNormStd:  JoinFloats(e.Norm.Std),
	}
}
