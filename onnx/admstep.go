package onnx

import (
	"fmt"

	"github.com/admpo/admpo/models"
)

// ExportADMStep writes one GRU step of an ADM for incremental roll-outs:
// inputs hidden [layers, batch, H] (zeros before the first step), obs
// [batch, obs_dim] (the start state, the same at every step of a sequence)
// and act [batch, act_dim]; outputs hidden_out [layers, batch, H] and, for
// the sequence so far, next_obs_mean [batch, obs_dim] = obs + mean delta,
// reward_mean [batch, 1] and logvar [batch, obs_dim+1].
func ExportADMStep(m *models.ADM, meta map[string]string) ([]byte, error) {
	if err := checkADM(m); err != nil {
		return nil, fmt.Errorf("onnx: export ADM step: %w", err)
	}
	c := m.Cfg
	g := NewGraph("admpo_adm_step", "Any-step Dynamics Model, one GRU step")
	hidden := g.Input(NameHidden, Float, Fixed(c.Layers), Batch, Fixed(c.Hidden))
	obs := g.Input(NameObs, Float, Batch, Fixed(c.ObsDim))
	act := g.Input(NameAct, Float, Batch, Fixed(c.ActDim))
	obsN := normalize(g, obs, m.Norm.Mean[:c.ObsDim], m.Norm.Std[:c.ObsDim])
	actN := normalize(g, act, m.Norm.Mean[c.ObsDim:], m.Norm.Std[c.ObsDim:])

	var x string
	outs := make([]string, c.Layers)
	axes := int64s(g, "axes", 0)
	for li := range m.GRU {
		l := &m.GRU[li]
		h := g.Op("Gather", []string{hidden, g.Int64s("layer", nil, []int64{int64(li)})}, AttrInt("axis", 0))
		var gi [3]string
		if li == 0 {
			u := newUnrolledLayer(g, l, c.ObsDim)
			gi = u.projectAction(g, u.projectStart(g, obsN), actN)
			x = u.cell(g, gi, h)
		} else {
			u := newUnrolledLayer(g, l, l.In)
			x = u.cell(g, u.project(g, x), h)
		}
		outs[li] = g.Op("Unsqueeze", []string{x, axes})
	}
	hOut := outs[0]
	if len(outs) > 1 {
		hOut = g.Op("Concat", outs, AttrInt("axis", 0))
	}
	g.Output(hOut, NameHiddenOut, Float, Fixed(c.Layers), Batch, Fixed(c.Hidden))
	out := admHead(g, m, x)
	d := int64(c.ObsDim + 1)
	parts := g.OpN("Split", []string{out, int64s(g, "split", d, d)}, 2, AttrInt("axis", -1))
	admOutputs(g, m, obs, parts[0], parts[1])

	md, err := mergeMeta(meta, admMeta(m, "adm_step", nil))
	if err != nil {
		return nil, fmt.Errorf("onnx: export ADM step: %w", err)
	}
	return g.Model(md)
}
