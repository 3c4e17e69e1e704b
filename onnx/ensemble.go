package onnx

import (
	"strconv"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

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
