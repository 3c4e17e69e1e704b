// Makes the CUDA C subset of the kernel sources compile as C99 on the host:
// one block of one thread, so a grid-stride loop visits every element in
// order. Only what the kernels use is defined; __syncthreads and shared
// memory are deliberately absent, so a kernel that needs them fails to build
// here instead of running wrongly.
#ifndef ADMPO_EMU_H
#define ADMPO_EMU_H

#include <math.h>

struct emu_dim3 {
	unsigned x, y, z;
};

static const struct emu_dim3 blockIdx = {0, 0, 0};
static const struct emu_dim3 threadIdx = {0, 0, 0};
static const struct emu_dim3 blockDim = {1, 1, 1};
static const struct emu_dim3 gridDim = {1, 1, 1};

// Kernels are static: package emu includes every source into the one
// translation unit that calls them.
#define KERNEL static void
#define __global__
#define __device__ static inline
#define __forceinline__
#define __restrict__ restrict

#endif
