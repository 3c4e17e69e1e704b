//go:build admpo_cuda

package driver

import (
	"fmt"

	"gorgonia.org/cu"

	"github.com/admpo/admpo/internal/gpu"
)

// Built reports whether this binary was built with the admpo_cuda tag.
const Built = true

// Query asks the CUDA driver for its version and its devices.
func Query() (gpu.Info, error) {
	v := cu.Version()
	if v < 0 {
		return gpu.Info{}, fmt.Errorf("gpu: cuDriverGetVersion failed")
	}
	info := gpu.Info{Driver: gpu.DriverVersion(v)}
	n, err := cu.NumDevices()
	if err != nil {
		return info, fmt.Errorf("gpu: counting devices: %w", err)
	}
	for i := 0; i < n; i++ {
		d := cu.Device(i)
		name, err := d.Name()
		if err != nil {
			return info, fmt.Errorf("gpu: device %d name: %w", i, err)
		}
		mem, err := d.TotalMem()
		if err != nil {
			return info, fmt.Errorf("gpu: device %d memory: %w", i, err)
		}
		major, minor, err := d.ComputeCapability()
		if err != nil {
			return info, fmt.Errorf("gpu: device %d compute capability: %w", i, err)
		}
		info.Devices = append(info.Devices, gpu.Device{Name: name, Memory: mem, Major: major, Minor: minor})
	}
	return info, nil
}
