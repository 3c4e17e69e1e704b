// Package device is the small interface under admpo's GPU training path:
// buffers of float32 or int32 elements on a device, copies to and from the
// host, element-wise and reduction kernels launched by name, a column-major
// matrix product and its strided-batched form with cuBLAS's semantics
// (cublasSgemm, cublasSgemmStridedBatched), and a stream to wait on.
//
// Two implementations exist. Package device/cuda runs on an NVIDIA GPU
// through gorgonia.org/cu (build tag admpo_cuda) with PTX compiled from the
// kernel sources in device/kernels and cuBLAS loaded at run time. Package
// device/emu compiles the same kernel sources for the host through a small
// emulation header and multiplies through internal/cpukern, so everything above this
// interface is tested on machines without a GPU.
//
// The kernels and their parameters are listed here (see Kernels), so both
// implementations check a launch the same way before running it. Every
// kernel takes the element count n first (passed as Launch's n) and then
// the arguments given to Launch: Buffers, int32 (or int) and float32
// values, in the order of the kernel's Params. Launch reports an unknown
// kernel, a wrong argument count or type, a buffer of the wrong element
// type, a buffer too short for n, and a freed buffer, without running
// anything. Launches, products and copies are ordered on one stream; Download
// waits for the work before it.
//
// Both implementations are also Capturers: work queued between BeginCapture
// and EndCapture is recorded into a Graph (a CUDA graph on cuda) that one
// call queues again, reading the buffers as they are then; see
// device/sacdev's Config.Graph.
package device
