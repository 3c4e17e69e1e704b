package goruntime

import "slices"

// ops are the ONNX op types the runtime implements: those of the actors
// admpo's onnx package exports (Gemm, Relu or Sigmoid·Mul for swish, Tanh,
// Exp, Mul, Add, Identity) and MatMul. Binary ops broadcast a scalar or a
// row constant over the batch; Gemm and MatMul take the batch as A and an
// initialiser as B.
var ops = []string{"Add", "Exp", "Gemm", "Identity", "MatMul", "Mul", "Relu", "Sigmoid", "Tanh"}

// Ops returns the ONNX op types the runtime implements, sorted.
func Ops() []string { return slices.Clone(ops) }

// Unsupported returns the op types among types that the runtime cannot run,
// in their order (none for the actors admpo's onnx package exports).
func Unsupported(types []string) []string {
	var bad []string
	for _, op := range types {
		if !slices.Contains(ops, op) {
			bad = append(bad, op)
		}
	}
	return bad
}
