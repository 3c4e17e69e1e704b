//go:build admpo_cuda

package infer_test

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/infer/iobind"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// GPU checks: the same inputs through CPU sessions and CUDA sessions give
// the same outputs within 1e-4 (relative to max(1, |value|): absolute near
// 0). They run only in an admpo_cuda build with ADMPO_GPU_TEST=1 on a host
// with an NVIDIA GPU, the CUDA 13 libraries on the loader's path and
// ONNX Runtime's CUDA provider (`make setup-gpu`, its core through
// ADMPO_ORT_LIB). Run them alone:
//
//	ADMPO_GPU_TEST=1 ADMPO_ORT_LIB=~/.cache/admpo/onnxruntime-gpu-1.29.0/libonnxruntime.so.1 \
//	  go test -tags admpo_cuda -run TestCUDA -v ./infer/
//
// TestCUDAGraphFile (graphfile_internal_test.go) checks one ONNX file the
// same way; scripts/gpu_bisect.sh drives it to find the node that crashes.

const gpuTol = 1e-4

// cudaOpts are the CUDA sessions' options; the CPU sessions use testOpts.
var cudaOpts = infer.Options{Provider: "cuda", Threads: 1, Workers: gpuEnvInt("ADMPO_GPU_WORKERS")}

// gpuEnvInt reads a non-negative integer setting of the GPU tests (0 when unset).
func gpuEnvInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return max(n, 0)
}

// gpuForm is the direct engine's ADM graph form under test: ADMPO_GPU_FORM
// = unrolled (default), gru or packed (crashed ONNX Runtime 1.29's CUDA
// provider until its rewrite without data-dependent Slice).
func gpuForm() onnx.ADMForm {
	switch os.Getenv("ADMPO_GPU_FORM") {
	case "packed":
		return onnx.ADMPacked
	case "gru":
		return onnx.ADMGRUOp
	}
	return onnx.ADMUnrolled
}

// gpuStepForm is the incremental engine's step graph form under test:
// ADMPO_GPU_FORM = gru gives the GRU-op step graph, any other form the
// unrolled one (the step graph has no packed form).
func gpuStepForm() onnx.ADMForm {
	if gpuForm() == onnx.ADMGRUOp {
		return onnx.ADMGRUOp
	}
	return onnx.ADMUnrolled
}

// gpuEngine reports whether ADMPO_GPU_ENGINES (comma-separated; default
// direct; direct,incremental adds the step graph, which crashed the CUDA
// provider until its rewrite) selects the engine.
func gpuEngine(name string) bool {
	v := os.Getenv("ADMPO_GPU_ENGINES")
	if v == "" {
		v = "direct"
	}
	return slices.Contains(strings.Split(v, ","), name)
}

// needGPU skips the test unless ADMPO_GPU_TEST=1; with it, the test fails
// when ONNX Runtime or its CUDA provider cannot be loaded.
func needGPU(t *testing.T) {
	t.Helper()
	if os.Getenv("ADMPO_GPU_TEST") != "1" {
		t.Skip("GPU test: set ADMPO_GPU_TEST=1 on a host with an NVIDIA GPU, the CUDA 13 libraries (LD_LIBRARY_PATH) and `make setup-gpu` (ADMPO_ORT_LIB=<its dir>/libonnxruntime.so.1)")
	}
	if err := infer.Init(); err != nil {
		t.Fatalf("ADMPO_GPU_TEST=1 but ONNX Runtime does not load: %v", err)
	}
	dev, err := infer.CUDADevice()
	if err != nil {
		t.Fatalf("ADMPO_GPU_TEST=1 but the CUDA provider is unavailable: %v", err)
	}
	opts, _ := infer.CUDAOptions()
	t.Logf("ONNX Runtime %s, CUDA provider %s on %s, options %v", infer.RuntimeVersion(), infer.CUDAProviderPath(), dev, opts)
}

// sameFloats describes the first of got that differs from want by more
// than gpuTol (relative to max(1, |want|)), or returns "".
func sameFloats(got, want []float32) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d values, want %d", len(got), len(want))
	}
	for i := range got {
		if !testfix.CloseTo(got[i], want[i], gpuTol) {
			return fmt.Sprintf("value %d = %g, want %g", i, got[i], want[i])
		}
	}
	return ""
}

// TestCUDAPolicy: the policy's deterministic and stochastic actions for the
// same observations and noise.
func TestCUDAPolicy(t *testing.T) {
	needGPU(t)
	for _, gm := range gpuModels {
		t.Run(gm.name, func(t *testing.T) {
			_, actor := newGPUModels(t, gm, 7)
			cpu := openEngine(t, "actor (cpu)", actor, nil, infer.OpenPolicy, testOpts)
			gpu := openEngine(t, "actor (cuda)", actor, nil, infer.OpenPolicy, cudaOpts)
			rng := rand.New(rand.NewSource(3))
			for _, n := range []int{1, 300, 4096} {
				obs := make([]float32, n*cpu.ObsDim)
				noise := make([]float32, n*cpu.ActDim)
				for i := range obs {
					obs[i] = float32(rng.NormFloat64())
				}
				for i := range noise {
					noise[i] = float32(rng.NormFloat64())
				}
				for _, nz := range [][]float32{nil, noise} {
					want, got := make([]float32, n*cpu.ActDim), make([]float32, n*cpu.ActDim)
					if err := cpu.Act(obs, nz, want); err != nil {
						t.Fatal(err)
					}
					if err := gpu.Act(obs, nz, got); err != nil {
						t.Fatalf("cuda policy: %v", err)
					}
					if d := sameFloats(got, want); d != "" {
						t.Fatalf("%d rows (deterministic %v): cuda vs cpu action %s", n, nz == nil, d)
					}
				}
			}
		})
	}
}

// TestCUDARollout: full multi-step roll-outs (H 5, a few hundred rows of
// mixed history lengths) of the direct and the incremental engine, with and
// without U^ADM and MC dropout, on the CPU and with CUDA, same seed: the
// same transitions.
func TestCUDARollout(t *testing.T) {
	needGPU(t)
	for _, gm := range gpuModels {
		adm, actor := newGPUModels(t, gm, 21)
		m, od, ad := gm.cfg.M, gm.cfg.ObsDim, gm.cfg.ActDim
		polCPU := openEngine(t, "actor (cpu)", actor, nil, infer.OpenPolicy, testOpts)
		polGPU := openEngine(t, "actor (cuda)", actor, nil, infer.OpenPolicy, cudaOpts)
		start := testfix.RandStart(rand.New(rand.NewSource(5)), 300, m, od, ad, func(i int) int { return 1 + (i*7)%m })
		for _, p := range []float64{0, 0.1} {
			direct, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: gpuForm(), Dropout: p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			step, err := onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Form: gpuStepForm(), Dropout: p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			engines := []struct {
				name  string
				model []byte
				open  func([]byte, infer.Options) (infer.Roller, error)
			}{
				{"direct", direct, func(b []byte, o infer.Options) (infer.Roller, error) { return infer.OpenADMDirect(b, o) }},
				{"incremental", step, func(b []byte, o infer.Options) (infer.Roller, error) { return infer.OpenADMIncremental(b, o) }},
			}
			for _, e := range engines {
				if !gpuEngine(e.name) {
					continue
				}
				cpu := openEngine(t, e.name+" (cpu)", e.model, nil, e.open, testOpts)
				gpu := openEngine(t, e.name+" (cuda)", e.model, nil, e.open, cudaOpts)
				for _, penalty := range []float32{0, 1} {
					t.Run(fmt.Sprintf("%s/%s/dropout%g/penalty%g", gm.name, e.name, p, penalty), func(t *testing.T) {
						cfg := infer.RollConfig{Horizon: 5, Penalty: penalty}
						want, err := cpu.Rollout(polCPU, start, cfg, rand.New(rand.NewSource(9)))
						if err != nil {
							t.Fatal(err)
						}
						got, err := gpu.Rollout(polGPU, start, cfg, rand.New(rand.NewSource(9)))
						if err != nil {
							t.Fatalf("cuda roll-out: %v", err)
						}
						if d := testfix.DiffTransitions(got, want, od, ad, gpuTol); d != "" {
							t.Fatalf("cuda vs cpu: %s", d)
						}
						if got.N != start.N*cfg.Horizon {
							t.Fatalf("%d transitions, want %d (no row should end)", got.N, start.N*cfg.Horizon)
						}
						var u float64
						for _, x := range got.Uncertainty {
							u += float64(x)
						}
						if penalty > 0 && u == 0 {
							t.Fatal("U^ADM is 0 everywhere")
						}
					})
				}
			}
		}
	}
}

// TestCUDARolloutBound: the incremental engine on bound buffers in device
// memory (Binding on with CUDA: hidden states in CUDA memory, moved by the
// gather graph on the GPU) against the CPU's unbound engine, same seed,
// within 1e-4, with and without U^ADM and MC dropout, in one call per step
// and cut into calls of 64 plans run by two workers; and the CUDA engine
// unbound (Binding off) against the CPU too, the path it replaces. Every C
// object of the bound path is released on Close.
func TestCUDARolloutBound(t *testing.T) {
	needGPU(t)
	for _, gm := range gpuModels {
		adm, actor := newGPUModels(t, gm, 23)
		m, od, ad := gm.cfg.M, gm.cfg.ObsDim, gm.cfg.ActDim
		polCPU := openEngine(t, "actor (cpu)", actor, nil, infer.OpenPolicy, testOpts)
		polGPU := openEngine(t, "actor (cuda)", actor, nil, infer.OpenPolicy, cudaOpts)
		start := testfix.RandStart(rand.New(rand.NewSource(6)), 300, m, od, ad, func(i int) int { return 1 + (i*7)%m })
		for _, p := range []float64{0, 0.1} {
			step, err := onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Form: gpuStepForm(), Dropout: p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cpu := openEngine(t, "incremental (cpu)", step, nil, infer.OpenADMIncremental, testOpts)
			split := cudaOpts
			split.Workers, split.BatchRows = 2, 64
			for _, g := range []struct {
				name string
				opts infer.Options
			}{{"bound", withBinding(cudaOpts, infer.BindingOn)}, {"bound-split", withBinding(split, infer.BindingOn)}, {"unbound", withBinding(cudaOpts, infer.BindingOff)}} {
				base := iobind.Live()
				gpu, err := infer.OpenADMIncremental(step, g.opts)
				if err != nil {
					t.Fatalf("%s: open incremental (cuda, Binding %s): %v", gm.name, g.opts.Binding, err)
				}
				if gpu.Bound() != (g.opts.Binding == infer.BindingOn) {
					t.Fatalf("%s: Bound() = %v with Binding %s", g.name, gpu.Bound(), g.opts.Binding)
				}
				for _, penalty := range []float32{0, 1} {
					t.Run(fmt.Sprintf("%s/%s/dropout%g/penalty%g", gm.name, g.name, p, penalty), func(t *testing.T) {
						cfg := infer.RollConfig{Horizon: 5, Penalty: penalty}
						want, err := cpu.Rollout(polCPU, start, cfg, rand.New(rand.NewSource(9)))
						if err != nil {
							t.Fatal(err)
						}
						got, err := gpu.Rollout(polGPU, start, cfg, rand.New(rand.NewSource(9)))
						if err != nil {
							t.Fatalf("cuda roll-out: %v", err)
						}
						if d := testfix.DiffTransitions(got, want, od, ad, gpuTol); d != "" {
							t.Fatalf("cuda (%s) vs cpu: %s", g.name, d)
						}
						if got.N != start.N*cfg.Horizon {
							t.Fatalf("%d transitions, want %d (no row should end)", got.N, start.N*cfg.Horizon)
						}
					})
				}
				gpu.Close()
				if d := iobind.Live() - base; d != 0 {
					t.Errorf("%s: %d C objects of the bound path left after Close", g.name, d)
				}
			}
		}
	}
}
