// Shared by every kernel source. Under nvcc a KERNEL is an extern "C"
// __global__ function, so its PTX name is its C name; elsewhere emu.h makes
// the sources plain C for the host (package device/emu).
#ifndef ADMPO_KERNEL_H
#define ADMPO_KERNEL_H

#ifdef __CUDACC__
#define KERNEL extern "C" __global__ void
#else
#include "emu.h"
#endif

// Every kernel walks its n elements with this grid-stride loop: any grid
// size covers any n, and the emulation (one block of one thread) runs it as
// a plain loop.
#define GRID_STRIDE(i, n) \
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

#endif
