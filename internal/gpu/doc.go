// Package gpu holds what admpo reports about a host's NVIDIA GPU pieces:
// the types of the CUDA driver's answer (package gpu/driver asks it), and
// where the dynamic loader finds a shared library and whether it loads.
// Nothing here needs CUDA.
package gpu
