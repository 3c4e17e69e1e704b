// Package emu is a device.Device on the host: the kernel sources of
// device/kernels compiled as C through their emulation header (one block of
// one thread, so every grid-stride loop runs in order) and matrix products
// through the host training engine's kernels (internal/cpukern), with
// cuBLAS's column-major semantics. It needs no GPU and runs in
// every `go test`, so code written against package device is tested where
// no GPU exists; device/cuda runs the same sources on a GPU.
package emu
