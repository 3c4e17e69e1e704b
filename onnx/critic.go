package onnx

import (
	"fmt"
	"strconv"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

// ExportCritic writes a Q-network as an ONNX model with inputs obs
// [batch, obs_dim] and act [batch, act_dim] and output q [batch, 1] =
// Net([obs, act]).
func ExportCritic(c *models.Critic, meta map[string]string) ([]byte, error) {
	if err := checkCritic(c); err != nil {
		return nil, fmt.Errorf("onnx: export critic: %w", err)
	}
	g := NewGraph("admpo_critic", "SAC Q-network")
	x := obsActInputs(g, c.ObsDim, c.ActDim)
	h := mlpHidden(g, x, "critic", &c.Net)
	q := linear(g, h, "critic_out", &c.Net.Layers[len(c.Net.Layers)-1])
	g.Output(q, schema.Q, Float, Batch, Fixed(1))

	return modelBytes(g, "critic", meta, map[string]string{
		schema.MetaModel:  schema.KindCritic,
		schema.MetaObsDim: strconv.Itoa(c.ObsDim),
		schema.MetaActDim: strconv.Itoa(c.ActDim),
	})
}
