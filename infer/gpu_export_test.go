package infer_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/npz"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
)

// gpuSplitOpts are CPU sessions cut into ONNX Runtime calls as the CUDA
// engines of TestCUDARollout cut them (one worker, no row cap), so that
// their runs see the inputs the CUDA sessions saw.
var gpuSplitOpts = infer.Options{Threads: 1, Workers: 1, BatchRows: 1 << 30}

// TestGPUExportGraphs writes, into $ADMPO_GPU_EXPORT (skipped when unset),
// the graphs that crashed ONNX Runtime 1.29's CUDA provider in
// TestCUDARollout (dropout 0, penalty 0) with the inputs of their first Run
// there, for TestCUDAGraphFile and scripts/gpu_bisect.sh: for each model
// size (small, hopper) NAME_packed.onnx (the direct engine's packed ADM
// graph), NAME_step.onnx (the incremental engine's step graph) and
// NAME_unrolled.onnx (the unrolled form, which ran on CUDA: a control fed
// the packed graph's inputs), NAME_gru.onnx (the GRU-op form, fed the
// same inputs) and NAME_stepgru.onnx (the step graph's GRU-op form, fed the
// step graph's inputs): gpu_check.sh's placement step shows where ONNX
// Runtime puts their GRU nodes. Each comes with NAME_FORM.npz. The inputs come from
// the same models, start windows and seeds on the CPU, split as the CUDA
// engines split them; the one difference is the policy's action in each
// plan's last step, here from the CPU policy (the CUDA one's differs by
// float rounding).
func TestGPUExportGraphs(t *testing.T) {
	dir := os.Getenv("ADMPO_GPU_EXPORT")
	if dir == "" {
		t.Skip("set ADMPO_GPU_EXPORT=<dir> to write the crashing GPU graphs and their inputs")
	}
	ortskip.IfMissing(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, gm := range gpuModels {
		adm, actor := newGPUModels(t, gm, 21)
		m, od, ad := gm.cfg.M, gm.cfg.ObsDim, gm.cfg.ActDim
		pol := openEngine(t, "actor", actor, nil, infer.OpenPolicy, testOpts)
		start := testfix.RandStart(rand.New(rand.NewSource(5)), 300, m, od, ad, func(i int) int { return 1 + (i*7)%m })
		packed, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMPacked}, nil)
		if err != nil {
			t.Fatal(err)
		}
		unrolled, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMUnrolled}, nil)
		if err != nil {
			t.Fatal(err)
		}
		gruOp, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMGRUOp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		step, err := onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		stepGRU, err := onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Form: onnx.ADMGRUOp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		direct := openEngine(t, "packed ADM", packed, nil, infer.OpenADMDirect, gpuSplitOpts)
		inc := openEngine(t, "ADM step", step, nil, infer.OpenADMIncremental, gpuSplitOpts)
		for _, e := range []struct {
			form, marker string
			model        []byte
			roller       infer.Roller
		}{
			{"packed", schema.Lengths, packed, direct},
			{"step", schema.Hidden, step, inc},
		} {
			arrays := firstRun(t, e.marker, func() error {
				_, err := e.roller.Rollout(pol, start, infer.RollConfig{Horizon: 5}, rand.New(rand.NewSource(9)))
				return err
			})
			base := filepath.Join(dir, gm.name+"_"+e.form)
			writeGraph(t, base, e.model, arrays)
			if e.form == "packed" {
				writeGraph(t, filepath.Join(dir, gm.name+"_unrolled"), unrolled, arrays)
				writeGraph(t, filepath.Join(dir, gm.name+"_gru"), gruOp, arrays)
			} else {
				writeGraph(t, filepath.Join(dir, gm.name+"_stepgru"), stepGRU, arrays)
			}
		}
	}
}

// firstRun runs roll and returns the inputs of the first Session.Run whose
// input names include marker.
func firstRun(t *testing.T, marker string, roll func() error) []npz.Array {
	t.Helper()
	var got []npz.Array
	stop := infer.CaptureRuns(func(names []string, vals []ort.Value) {
		if got != nil || !slices.Contains(names, marker) {
			return
		}
		got = []npz.Array{}
		for i, v := range vals {
			a := npz.Array{Name: names[i], Shape: slices.Clone([]int64(v.GetShape()))}
			switch x := v.(type) {
			case *ort.Tensor[float32]:
				a.Data = slices.Clone(x.GetData())
			case *ort.Tensor[int32]:
				a.Data = slices.Clone(x.GetData())
			default:
				t.Errorf("input %q: unexpected type %T", names[i], v)
				continue
			}
			got = append(got, a)
		}
	})
	defer stop()
	if err := roll(); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatalf("no run with input %q", marker)
	}
	return got
}

// writeGraph writes base.onnx and base.npz.
func writeGraph(t *testing.T, base string, model []byte, arrays []npz.Array) {
	t.Helper()
	if err := os.WriteFile(base+".onnx", model, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(base+".npz", arrays); err != nil {
		t.Fatal(err)
	}
	for _, a := range arrays {
		t.Logf("%s: input %s %v", filepath.Base(base), a.Name, a.Shape)
	}
}
