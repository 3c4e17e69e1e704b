// Package models defines admpo's neural networks: their weights as plain
// float32 slices (weights.go), which the onnx package exports; the Gorgonia
// training graphs of SAC, BC, the ADM and the MBPO ensemble; the plain-Go
// inference forward; Adam; copying and checkpointing of weights. Every
// weight matrix is row-major with shape [In, Out] and is applied as
// y = x·W + b.
//
// The custom Gorgonia operations and the C kernels the graphs and the
// plain-Go forward run on live in the subpackage ops; this package holds the
// weights as graph nodes (LinearNodes, GRUNodes, …) and applies those ops.
package models
