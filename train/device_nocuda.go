//go:build !admpo_cuda

package train

import (
	"errors"

	"github.com/admpo/admpo/device"
)

// CUDABuilt tells whether this binary has the CUDA device (the admpo_cuda
// tag); device cuda needs it.
const CUDABuilt = false

func openCUDA() (device.Device, error) {
	return nil, errors.New("train: device cuda needs a binary built with the admpo_cuda tag (go build -tags admpo_cuda)")
}
