// Every kernel, in one translation unit: nvcc compiles this file to the
// committed PTX (kernels.ptx) and package device/emu includes it.
#include "elementwise.cu"
#include "nn.cu"
#include "adam.cu"
#include "sac.cu"
#include "adm.cu"
#include "bc.cu"
#include "ensemble.cu"
#include "roll.cu"
