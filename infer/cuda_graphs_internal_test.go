package infer

import (
	"strings"
	"testing"

	"github.com/admpo/admpo/onnx/schema"
)

// TestCUDARefusesCrashingGraphs: with the CUDA provider the packed ADM graph
// and the ADM step graph are refused with an error naming the way out; the
// unrolled and GRU-op graphs, the actor and every graph on the CPU pass.
func TestCUDARefusesCrashingGraphs(t *testing.T) {
	adm := func(form string) map[string]string {
		return map[string]string{schema.MetaModel: schema.KindADM, schema.MetaADMForm: form}
	}
	step := map[string]string{schema.MetaModel: schema.KindADMStep}
	cuda, cpu := Options{Provider: "CUDA"}, Options{}
	for _, c := range []struct {
		name string
		opts Options
		meta map[string]string
		want string // "" for no error, else a part of the message
	}{
		{"cuda packed", cuda, adm("packed"), "unrolled form"},
		{"cuda step", cuda, step, "direct engine"},
		{"cuda unrolled", cuda, adm("unrolled"), ""},
		{"cuda gru", cuda, adm("gru"), ""},
		{"cuda actor", cuda, map[string]string{schema.MetaModel: "actor"}, ""},
		{"cpu packed", cpu, adm("packed"), ""},
		{"cpu step", cpu, step, ""},
	} {
		err := cudaRunsGraph(c.opts, c.meta)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one that says %q", c.name, err, c.want)
		}
	}
}
