//go:build admpo_cuda

package train

import (
	"fmt"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/cuda"
)

// CUDABuilt tells whether this binary has the CUDA device (the admpo_cuda
// tag); device cuda needs it.
const CUDABuilt = true

// openCUDA opens the first GPU.
func openCUDA() (device.Device, error) {
	d, err := cuda.Open(cuda.Config{})
	if err != nil {
		return nil, fmt.Errorf("train: device cuda: %w", err)
	}
	return d, nil
}
