package onnx

import (
	"strconv"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

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
