// Package blas routes Gorgonia's matrix products through OpenBLAS (cgo) and
// reports which OpenBLAS kernel set is active.
//
// OpenBLAS picks its kernels when the library loads. Debian's OpenBLAS 0.3.21
// does not recognise CPUs whose model id a VM hides and falls back to slow
// generic kernels; OPENBLAS_CORETYPE (e.g. SkylakeX on AVX-512 machines,
// Haswell on AVX2) forces a choice, but only if it is set before the process
// starts. EnsureCoreType re-executes the current binary with a value chosen
// from /proc/cpuinfo when the variable is unset; a value already set is never
// changed.
package blas
