package onnx_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// Each malformed model must be rejected with an error naming the problem.
func TestExportRejectsBadModels(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cfg := models.ADMConfig{ObsDim: 3, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 1, M: 2}
	adm := func(edit func(m *models.ADM)) func() error {
		return func() error {
			m, err := models.NewADM(cfg, rng)
			if err != nil {
				t.Fatal(err)
			}
			edit(m)
			_, err = onnx.ExportADM(m, onnx.ADMOptions{}, nil)
			return err
		}
	}
	actor := func(edit func(a *models.Actor)) func() error {
		return func() error {
			a := models.NewActor(4, []float64{-1, -1}, []float64{1, 1}, []int{8}, rng)
			edit(a)
			_, err := onnx.ExportActor(a, nil)
			return err
		}
	}
	ens := func(edit func(e *models.Ensemble)) func() error {
		return func() error {
			e := models.NewEnsemble(3, 1, 3, []int{8, 8}, rng)
			edit(e)
			_, err := onnx.ExportEnsemble(e, nil)
			return err
		}
	}
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"nil actor", func() error { _, err := onnx.ExportActor(nil, nil); return err }, "nil actor"},
		{"nil critic", func() error { _, err := onnx.ExportCritic(nil, nil); return err }, "nil critic"},
		{"nil ADM", func() error { _, err := onnx.ExportADM(nil, onnx.ADMOptions{}, nil); return err }, "nil ADM"},
		{"nil ADM step", func() error { _, err := onnx.ExportADMStep(nil, nil); return err }, "nil ADM"},
		{"nil ensemble", func() error { _, err := onnx.ExportEnsemble(nil, nil); return err }, "nil ensemble"},
		{"actor output width", actor(func(a *models.Actor) { a.ActDim = 3 }), "output size 4, want 6"},
		{"actor short W", actor(func(a *models.Actor) { a.Net.Layers[0].W = a.Net.Layers[0].W[1:] }), "Net.Layers[0].W has 31 values, want 32"},
		{"actor NaN", actor(func(a *models.Actor) { a.Net.Layers[1].B[0] = float32(math.NaN()) }), "Net.Layers[1].B[0] is NaN"},
		{"actor scale", actor(func(a *models.Actor) { a.Scale = a.Scale[:1] }), "Scale has 1 values, want 2"},
		{"actor logstd", actor(func(a *models.Actor) { a.LogStdMin = 3 }), "LogStdMin 3 > LogStdMax 2"},
		{"actor activation", actor(func(a *models.Actor) { a.Net.Activation = "gelu" }), `unknown activation "gelu"`},
		{"critic input", func() error {
			c := models.NewCritic(4, 2, []int{8}, rng)
			c.ObsDim = 5
			_, err := onnx.ExportCritic(c, nil)
			return err
		}, "input size 6, want 7"},
		{"ADM layers", adm(func(m *models.ADM) { m.GRU = m.GRU[:1] }), "1 GRU layers, config says 2"},
		{"ADM GRU size", adm(func(m *models.ADM) { m.GRU[1].Wh = m.GRU[1].Wh[:10] }), "GRU[1].Wh has 10 values, want 192"},
		{"ADM norm", adm(func(m *models.ADM) { m.Norm.Std[2] = 0 }), "Norm.Std[2] = 0, want > 0"},
		{"ADM norm size", adm(func(m *models.ADM) { m.Norm.Mean = m.Norm.Mean[:3] }), "Norm.Mean has 3 values, want 5"},
		{"ADM out", adm(func(m *models.ADM) { m.Out = models.NewLinear(8, 7, rng) }), "Out: output size 7, want 8"},
		{"ADM bounds", adm(func(m *models.ADM) { m.Bounds.Min = nil }), "Bounds.Min has 0 values, want 4"},
		{"ADM blocks", adm(func(m *models.ADM) { m.Blocks = nil }), "0 ResBlocks, config says 1"},
		{"ADM layer norm", adm(func(m *models.ADM) { m.Blocks[0].Norm.Gamma = nil }), "Blocks[0].Norm.Gamma has 0 values"},
		{"ADM config", adm(func(m *models.ADM) { m.Cfg.M = 0 }), "invalid config"},
		{"ADM form", func() error {
			m, _ := models.NewADM(cfg, rng)
			_, err := onnx.ExportADM(m, onnx.ADMOptions{Form: 7}, nil)
			return err
		}, "unknown form ADMForm(7)"},
		{"ensemble widths", ens(func(e *models.Ensemble) {
			e.Members[2] = models.NewMLP([]int{4, 8, 9, 8}, "swish", rng)
		}), "Members[2].Layers[1]: width 9 differs"},
		{"ensemble bounds", ens(func(e *models.Ensemble) { e.Bounds = e.Bounds[:2] }), "2 bounds for 3 members"},
		{"ensemble elite", ens(func(e *models.Ensemble) { e.Elites = []int{3} }), "elite index 3 out of range"},
		{"ensemble empty", ens(func(e *models.Ensemble) { e.Members, e.Bounds = nil, nil }), "no members"},
		{"metadata clash", func() error {
			_, err := onnx.ExportCritic(models.NewCritic(4, 2, []int{8}, rng), map[string]string{"obs_dim": "5"})
			return err
		}, `metadata key "obs_dim": caller gives "5" but the model has "4"`},
	}
	for _, c := range cases {
		err := c.run()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "onnx: export") {
			t.Errorf("%s: error %q, want one containing %q", c.name, err, c.want)
		}
	}
}

// A caller may repeat an exporter key with the same value.
func TestMetadataSameValueAccepted(t *testing.T) {
	c := models.NewCritic(4, 2, []int{8}, rand.New(rand.NewSource(1)))
	if _, err := onnx.ExportCritic(c, map[string]string{"obs_dim": "4", "task": "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestGraphBuilderErrors(t *testing.T) {
	g := onnx.NewGraph("g", "")
	x := g.Input("x", onnx.Float, onnx.Batch)
	g.Op("Relu", []string{"nope"})
	g.Output(x, "y", onnx.Float, onnx.Batch)
	if _, err := g.Model(nil); err == nil || !strings.Contains(err.Error(), `input "nope" is not defined`) {
		t.Errorf("undefined input: got %v", err)
	}
	g = onnx.NewGraph("g", "")
	g.Input("x", onnx.Float, onnx.Batch)
	g.Input("x", onnx.Float, onnx.Batch)
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), `value "x" defined twice`) {
		t.Errorf("duplicate input: got %v", err)
	}
	g = onnx.NewGraph("g", "")
	g.Float("w", []int64{2, 3}, make([]float32, 5))
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "5 values do not fill shape [2 3]") {
		t.Errorf("bad initializer: got %v", err)
	}
	g = onnx.NewGraph("g", "")
	g.Input("x", onnx.Float, onnx.Batch)
	if _, err := g.Model(nil); err == nil || !strings.Contains(err.Error(), "no outputs") {
		t.Errorf("no outputs: got %v", err)
	}
}
