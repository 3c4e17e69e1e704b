package onnx_test

import (
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// checkScript runs onnx.checker.check_model(full_check=True) on every file
// and prints what the onnx package decoded from each.
const checkScript = `
import json, sys, onnx
res = {}
for path in sys.argv[1:]:
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    def io(vs):
        return [[v.name, v.type.tensor_type.elem_type,
                 [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]] for v in vs]
    res[path] = {
        "ir": m.ir_version,
        "opset": [[o.domain, o.version] for o in m.opset_import],
        "producer": m.producer_name,
        "meta": {p.key: p.value for p in m.metadata_props},
        "inputs": io(m.graph.input),
        "outputs": io(m.graph.output),
    }
print(json.dumps(res))
`

type pyModel struct {
	IR       int               `json:"ir"`
	Opset    [][]any           `json:"opset"`
	Producer string            `json:"producer"`
	Meta     map[string]string `json:"meta"`
	Inputs   [][]any           `json:"inputs"`
	Outputs  [][]any           `json:"outputs"`
}

// TestONNXCheckerAcceptsExports validates every exported graph with the
// official onnx checker (full_check runs strict shape inference, so the
// declared output shapes must agree with the ops) and compares what the
// onnx package decodes with what was written.
func TestONNXCheckerAcceptsExports(t *testing.T) {
	pyref.Need(t, "onnx")
	rng := rand.New(rand.NewSource(1))
	cfg := models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 16, Layers: 3, ResBlocks: 2, M: 4}
	adm := randADM(t, 2, cfg)
	meta := map[string]string{"task": "hopper"}
	type export struct {
		name    string
		model   func() ([]byte, error)
		inputs  string
		outputs string
	}
	exports := []export{
		{"actor", func() ([]byte, error) { return onnx.ExportActor(randActor(3, 5, 2, []int{16, 16}), meta) },
			"obs:1:batch,5 noise:1:batch,2", "action:1:batch,2 mean_action:1:batch,2"},
		{"critic", func() ([]byte, error) { return onnx.ExportCritic(models.NewCritic(5, 2, []int{16}, rng), meta) },
			"obs:1:batch,5 act:1:batch,2", "q:1:batch,1"},
		{"ensemble", func() ([]byte, error) { return onnx.ExportEnsemble(randEnsemble(4, 5, 2, 3, []int{8, 8}), meta) },
			"obs:1:batch,5 act:1:batch,2", "mean:1:3,batch,6 logvar:1:3,batch,6"},
		{"adm_step", func() ([]byte, error) { return onnx.ExportADMStep(adm, meta) },
			"hidden:1:3,batch,16 obs:1:batch,5 act:1:batch,2",
			"hidden_out:1:3,batch,16 next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"},
	}
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
		for _, all := range []bool{false, true} {
			opts := onnx.ADMOptions{Form: form, AllSteps: all}
			outs := "next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"
			if all {
				outs = "all_mean:1:4,batch,6 " + outs
			}
			exports = append(exports, export{"adm_" + form.String() + map[bool]string{true: "_all"}[all],
				func() ([]byte, error) { return onnx.ExportADM(adm, opts, meta) },
				"obs:1:batch,5 actions:1:4,batch,2 lengths:6:batch", outs})
		}
		// MC dropout (the roll-out graphs of --rollout-dropout).
		mask := "dropout_mask:1:2,batch,16"
		exports = append(exports, export{"adm_" + form.String() + "_dropout",
			func() ([]byte, error) { return onnx.ExportADM(adm, onnx.ADMOptions{Form: form, Dropout: 0.1}, meta) },
			"obs:1:batch,5 actions:1:4,batch,2 lengths:6:batch " + mask,
			"next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"})
	}
	exports = append(exports,
		export{"adm_packed_dropout",
			func() ([]byte, error) {
				return onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMPacked, Dropout: 0.1}, meta)
			},
			"obs:1:batch,5 actions:1:4,batch,2 lengths:6:batch dropout_mask:1:2,batch,16",
			"next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"},
		export{"adm_step_gru",
			func() ([]byte, error) {
				return onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Form: onnx.ADMGRUOp}, meta)
			},
			"hidden:1:3,batch,16 obs:1:batch,5 act:1:batch,2",
			"hidden_out:1:3,batch,16 next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"},
		export{"adm_step_dropout",
			func() ([]byte, error) {
				return onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Dropout: 0.1}, meta)
			},
			"hidden:1:3,batch,16 obs:1:batch,5 act:1:batch,2 dropout_mask:1:2,mask_rows,16",
			"hidden_out:1:3,batch,16 next_obs_mean:1:batch,5 reward_mean:1:batch,1 logvar:1:batch,6"})
	dir := t.TempDir()
	var paths []string
	for _, e := range exports {
		b, err := e.model()
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		p := filepath.Join(dir, e.name+".onnx")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(pyref.Python, append([]string{"-c", checkScript}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx checker: %v\n%s", err, out)
	}
	var res map[string]pyModel
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decoding checker output: %v\n%s", err, out)
	}
	for i, e := range exports {
		r, ok := res[paths[i]]
		if !ok {
			t.Fatalf("%s: no checker result", e.name)
		}
		if r.IR != onnx.IRVersion || r.Producer != onnx.ProducerName {
			t.Errorf("%s: ir %d producer %q", e.name, r.IR, r.Producer)
		}
		if len(r.Opset) != 1 || r.Opset[0][0] != "" || r.Opset[0][1] != float64(onnx.OpsetVersion) {
			t.Errorf("%s: opset %v", e.name, r.Opset)
		}
		if got := ioString(r.Inputs); got != e.inputs {
			t.Errorf("%s: inputs %q, want %q", e.name, got, e.inputs)
		}
		if got := ioString(r.Outputs); got != e.outputs {
			t.Errorf("%s: outputs %q, want %q", e.name, got, e.outputs)
		}
		wantKind := e.name
		for _, suffix := range []string{"_dropout", "_all", "_gru", "_unrolled", "_packed"} {
			wantKind = strings.TrimSuffix(wantKind, suffix)
		}
		if d := strings.HasSuffix(e.name, "_dropout"); d != (r.Meta["dropout"] == "0.1") {
			t.Errorf("%s: metadata dropout = %q", e.name, r.Meta["dropout"])
		}
		if r.Meta["admpo_model"] != wantKind || r.Meta["task"] != "hopper" || r.Meta["admpo_version"] != onnx.Version ||
			r.Meta["obs_dim"] != "5" || r.Meta["act_dim"] != "2" {
			t.Errorf("%s: metadata %v", e.name, r.Meta)
		}
		if strings.HasPrefix(e.name, "adm") {
			want := map[string]string{"m": "4", "hidden": "16", "layers": "3", "res_blocks": "2",
				"norm_mean": onnx.JoinFloats(adm.Norm.Mean), "norm_std": onnx.JoinFloats(adm.Norm.Std)}
			for k, v := range want {
				if r.Meta[k] != v {
					t.Errorf("%s: metadata %s = %q, want %q", e.name, k, r.Meta[k], v)
				}
			}
		}
	}
}

// ioString writes inputs/outputs as "name:elemtype:d1,d2 ...".
func ioString(vs [][]any) string {
	var parts []string
	for _, v := range vs {
		var dims []string
		for _, d := range v[2].([]any) {
			switch d := d.(type) {
			case string:
				dims = append(dims, d)
			case float64:
				dims = append(dims, strconv.FormatFloat(d, 'f', -1, 64))
			}
		}
		parts = append(parts, v[0].(string)+":"+strconv.FormatFloat(v[1].(float64), 'f', -1, 64)+":"+strings.Join(dims, ","))
	}
	return strings.Join(parts, " ")
}
