//go:build !admpo_cuda

package cudaep

import ort "github.com/yalue/onnxruntime_go"

// Register returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func Register(providerLib string) error { return ErrNotBuilt }

// Devices returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func Devices(ortLib string) ([]Device, error) { return nil, ErrNotBuilt }

// Append returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func Append(opts *ort.SessionOptions, ortLib, ep string, options map[string]string) error {
	return ErrNotBuilt
}

// AppendDevice returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func AppendDevice(opts *ort.SessionOptions, ortLib string, d Device, options map[string]string) error {
	return ErrNotBuilt
}

// AppendCUDA returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func AppendCUDA(opts *ort.SessionOptions, ortLib string, options map[string]string) (Device, error) {
	return Device{}, ErrNotBuilt
}

// AvailableProviders returns ErrNotBuilt: this binary was built without the admpo_cuda tag.
func AvailableProviders(ortLib string) ([]string, error) { return nil, ErrNotBuilt }
