// Package kernels holds the CUDA C sources of admpo's device kernels and the
// PTX that nvcc made from them.
//
// The sources (*.cu, kernel.h) are a C-compatible subset of CUDA: extern "C"
// kernels with grid-stride loops, no shared memory and no __syncthreads.
// Package device/emu compiles them for the host through emu.h; package
// device/cuda loads PTX, the output of `make ptx` (gen.sh), which is
// committed because most machines that build admpo have no nvcc. The first
// line of the PTX records the sha256 of the sources it was made from, and a
// test here fails when the sources changed without a new PTX.
package kernels
