package infer

import (
	"fmt"

	"github.com/admpo/admpo/onnx/schema"
)

// cudaRunsGraph refuses, with the CUDA provider, the two ADM graphs that
// crashed ONNX Runtime 1.29.0's CUDA provider inside Run (a segmentation
// fault, not an error) on an NVIDIA H100 on 2026-11-26: the packed direct
// graph and the incremental step graph. The unrolled and GRU-op direct
// graphs and the actor ran there and matched the CPU within 1e-4
// (docs/benchmarks.md, "GPU roll-outs"). Which operator crashes is not
// known yet.
func cudaRunsGraph(opts Options, meta map[string]string) error {
	if !opts.CUDA() {
		return nil
	}
	switch {
	case meta[schema.MetaModel] == schema.KindADMStep:
		return fmt.Errorf("infer: the incremental ADM engine's step graph crashes ONNX Runtime %s's CUDA provider (seen on an H100): use the direct engine with --provider cuda", GPUORTVersion)
	case meta[schema.MetaModel] == schema.KindADM && meta[schema.MetaADMForm] == "packed":
		return fmt.Errorf("infer: the packed ADM graph crashes ONNX Runtime %s's CUDA provider (seen on an H100): export the unrolled form (onnx.ADMUnrolled) for --provider cuda", GPUORTVersion)
	}
	return nil
}
