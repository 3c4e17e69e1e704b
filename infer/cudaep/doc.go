// Package cudaep loads ONNX Runtime's CUDA execution provider through the
// plugin execution-provider API: RegisterExecutionProviderLibrary (wrapped
// by onnxruntime_go), then GetEpDevices and
// SessionOptionsAppendExecutionProvider_V2, which onnxruntime_go v1.27.0
// does not wrap and which a small cgo shim here calls.
//
// The shim is compiled only with the admpo_cuda build tag; without it every
// function returns ErrNotBuilt. Nothing in this package has run on a GPU
// yet: on a machine without one, only its error paths and its use of the
// API with ONNX Runtime's built-in CPU provider are tested.
//
// The shim includes third_party/onnxruntime/onnxruntime_c_api.h (and
// onnxruntime_ep_c_api.h): ONNX Runtime's C API headers (Copyright
// Microsoft Corporation, MIT licence) as shipped in
// github.com/yalue/onnxruntime_go v1.27.0 (ORT_API_VERSION 24), the
// version admpo's onnxruntime_go build uses.
package cudaep
