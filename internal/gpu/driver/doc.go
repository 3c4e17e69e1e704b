// Package driver asks the CUDA driver for its version and devices.
//
// Built with the admpo_cuda tag, Query goes through gorgonia.org/cu. Such a
// binary links libcuda.so.1 and only starts where the NVIDIA driver is
// installed, and cu's package initialisation ends the process when cuInit
// fails (for instance when there is no device), so only commands meant for
// GPU hosts import this package. The tag is not called cuda because
// Gorgonia v0.9.18 uses that name for its own CUDA engine, which needs cuDNN
// and links cuBLAS at build time; admpo's GPU code opts in on its own.
// Built without the tag (the default), Query returns gpu.ErrNotBuilt and
// nothing here needs CUDA.
package driver
