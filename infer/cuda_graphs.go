package infer

import (
	"fmt"

	"github.com/admpo/admpo/internal/protofield"
)

// cudaRunsGraph refuses, with the CUDA provider, a graph with a Slice whose
// starts, ends, axes or steps are neither initializers nor Constant
// outputs: ONNX Runtime 1.29's CUDA provider crashes inside Run on one (a
// segmentation fault, not an error; docs/results/gpu/2026-11-27/bisect.txt).
// The packed ADM graph and the step graph exported before their rewrite had
// such Slices; exported again, they have none.
func cudaRunsGraph(opts Options, model []byte) error {
	if !opts.CUDA() {
		return nil
	}
	slice, err := dataDependentSlice(model)
	if err != nil {
		return fmt.Errorf("infer: reading the graph for the CUDA provider: %w", err)
	}
	if slice != "" {
		return fmt.Errorf("infer: the graph's Slice %s has bounds computed in the graph, which crash ONNX Runtime %s's CUDA provider: export the graph again with this admpo", slice, GPUORTVersion)
	}
	return nil
}

// dataDependentSlice returns the first output of the first Slice node of a
// serialized ModelProto's main graph whose inputs 1.. are neither
// initializers nor Constant outputs, or "" if none. (ModelProto graph = 7;
// GraphProto node = 1, initializer = 5; NodeProto input = 1, output = 2,
// op_type = 4; TensorProto name = 8.)
func dataDependentSlice(model []byte) (string, error) {
	graph, err := protofield.Bytes(model, 7)
	if err != nil || len(graph) != 1 {
		return "", fmt.Errorf("no graph: %v", err)
	}
	inits, err := protofield.Bytes(graph[0], 5)
	if err != nil {
		return "", err
	}
	constant := map[string]bool{}
	for _, t := range inits {
		name, err := protofield.Bytes(t, 8)
		if err != nil || len(name) != 1 {
			return "", fmt.Errorf("an initializer without a name: %v", err)
		}
		constant[string(name[0])] = true
	}
	nodes, err := protofield.Bytes(graph[0], 1)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		op, err := protofield.Bytes(n, 4)
		if err != nil || len(op) != 1 {
			return "", fmt.Errorf("a node without op_type: %v", err)
		}
		ins, err := protofield.Bytes(n, 1)
		if err != nil {
			return "", err
		}
		outs, err := protofield.Bytes(n, 2)
		if err != nil || len(outs) == 0 {
			return "", fmt.Errorf("a %s node without outputs: %v", op[0], err)
		}
		switch string(op[0]) {
		case "Constant":
			constant[string(outs[0])] = true
		case "Slice":
			for _, in := range ins[min(1, len(ins)):] {
				if len(in) > 0 && !constant[string(in)] {
					return string(outs[0]), nil
				}
			}
		}
	}
	return "", nil
}
