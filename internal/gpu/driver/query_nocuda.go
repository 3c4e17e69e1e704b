//go:build !admpo_cuda

package driver

import "github.com/admpo/admpo/internal/gpu"

// Built reports whether this binary was built with the admpo_cuda tag.
const Built = false

// Query returns gpu.ErrNotBuilt: this binary was built without the
// admpo_cuda tag.
func Query() (gpu.Info, error) {
	return gpu.Info{}, gpu.ErrNotBuilt
}
