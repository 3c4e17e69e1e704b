// Package scratch reuses the buffers that hot loops (the inference engines,
// the U^ADM monitor, the training kernels) fill afresh on every call. It
// imports nothing, so every package may use it.
package scratch
