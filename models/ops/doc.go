// Package ops holds the custom Gorgonia operations admpo's networks are
// built from, their C kernels and the fast math they share with the plain-Go
// inference forward of package models.
//
// The graph operations (Relu, Swish, Activate, AddBias, Linear, LinearRelu,
// SquashedGaussian, GRU, LayerNorm, ResBlockTail, SoftClamp, Columns,
// ConcatColumns, GaussianNLL, SumSquares, ScaledSum, KeepValue) loop over
// float32 slices directly or call the
// kernels of internal/cpukern (matrix products and element-wise work, chosen
// by the CPU's features) and cell_kernels.c. All but KeepValue are differentiable
// symbolically (G.Grad with a TapeMachine); Relu, Swish, AddBias and Linear
// also by the LispMachine. The fused ones keep their output and scratch
// buffers between runs, so one op instance serves one graph only. ValueF32
// reads a float32 node value back.
//
// The slice kernels (Sgemm, GRUCellRows, SwishInPlace, LayerNormRows,
// Softplus) are the same arithmetic for code that runs without a graph.
//
// ops knows nothing of networks or weights: of admpo it imports only
// internal packages (cpukern; blas for the thread count; scratch).
package ops
