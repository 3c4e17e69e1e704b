//go:build !admpo_cuda

package infer

import (
	"errors"

	ort "github.com/yalue/onnxruntime_go"
)

// CUDABuilt reports whether this binary was built with the admpo_cuda tag,
// which Provider "cuda" needs for ONNX Runtime's CUDA provider library.
const CUDABuilt = false

// errCUDANotBuilt is Provider "cuda"'s error in a binary built without the
// admpo_cuda tag.
var errCUDANotBuilt = errors.New("this admpo was built without the admpo_cuda tag: rebuild it with `go build -tags admpo_cuda ./cmd/admpo` and install ONNX Runtime's CUDA provider with `make setup-gpu`")

// appendCUDAPlugin fails: the plugin route needs the admpo_cuda tag.
func appendCUDAPlugin(so *ort.SessionOptions, opts map[string]string) error {
	return errCUDANotBuilt
}

// CUDADevice describes the device "cuda" sessions run on; without the
// admpo_cuda tag there is none.
func CUDADevice() (string, error) { return "", errCUDANotBuilt }
