// Package iobind binds ONNX Runtime inputs and outputs to caller-owned
// memory (I/O binding): OrtValues created with CreateTensorWithDataAsOrtValue
// over host memory or over memory of ONNX Runtime's CUDA provider, bound to
// a session with CreateIoBinding, BindInput and BindOutput, and run with
// RunWithBinding. github.com/yalue/onnxruntime_go keeps every tensor in Go
// memory on the CPU; with this package a roll-out engine can keep state
// in device memory between runs, so that one run's outputs are the next
// run's inputs without a round trip through the host.
//
// A small cgo shim calls ONNX Runtime's C API (OrtApi, reached through the
// library onnxruntime_go loaded, never a second copy) on the OrtSession of
// an onnxruntime_go DynamicAdvancedSession. It needs no CUDA headers and no
// build tag: with Memory CPU it runs, and is tested, on any machine; with
// Memory CUDA the buffers come from the session's allocator for device
// memory ("Cuda", OrtDeviceAllocator, OrtMemTypeDefault), which exists
// only in sessions on the CUDA provider.
//
// Every C object (OrtMemoryInfo, OrtAllocator, OrtValue, OrtIoBinding and
// the buffers) has a Release or Free method; Live counts those not yet
// released, for leak tests.
//
// The shim includes third_party/onnxruntime/onnxruntime_c_api.h, ONNX
// Runtime's C API header (Copyright Microsoft Corporation, MIT licence) as
// shipped in github.com/yalue/onnxruntime_go v1.27.0 (ORT_API_VERSION 24).
package iobind
