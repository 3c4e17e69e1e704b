// Package goruntime runs admpo's exported actors in pure Go, without ONNX
// Runtime or cgo: the "go" runtime of package policies.
//
// Compile decodes a model with onnx-go (github.com/owulveryck/onnx-go)
// into the package's own onnx-go backend, which records the graph's values,
// initialisers and operations, and turns the recorded graph, once, into a
// Program: a flat list of float32 kernels in topological order over
// row-major [rows, width] buffers, one plan per requested output. The
// products run on gonum's pure-Go BLAS (its float32 routines are
// assembly-accelerated on amd64), constructed directly so that they never
// go through a global BLAS that the process may have pointed at
// cgo/OpenBLAS.
//
// A Program is immutable and may be shared; a Runner holds one caller's
// buffers. Actor wraps both for the actor graph (onnx/schema.Actor): any
// batch size runs as it is, in chunks of 128 rows, and a batch-1 call
// allocates nothing once the first call has run.
//
// Only the op types in Ops() are implemented, with the attributes and
// broadcasts the exporter uses (see Compile's errors for the rest).
package goruntime
