//go:build !admpo_cuda

package cudaep_test

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/infer/cudaep"
)

func TestNotBuilt(t *testing.T) {
	if err := cudaep.Register("/any/libonnxruntime_providers_cuda.so"); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("Register: %v, want ErrNotBuilt", err)
	}
	if _, err := cudaep.Devices("/any/libonnxruntime.so.1"); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("Devices: %v, want ErrNotBuilt", err)
	}
	if err := cudaep.Append(nil, "", cudaep.EPName, nil); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("Append: %v, want ErrNotBuilt", err)
	}
	if err := cudaep.AppendDevice(nil, "", cudaep.Device{}, nil); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("AppendDevice: %v, want ErrNotBuilt", err)
	}
	if _, err := cudaep.AvailableProviders(""); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("AvailableProviders: %v, want ErrNotBuilt", err)
	}
	if _, err := cudaep.AppendCUDA(nil, "", nil); !errors.Is(err, cudaep.ErrNotBuilt) {
		t.Errorf("AppendCUDA: %v, want ErrNotBuilt", err)
	}
}
