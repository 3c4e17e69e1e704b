package cudaep

import (
	"errors"
	"fmt"
	"strings"
)

// RegistrationName is the name under which Register registers the CUDA
// provider library with ONNX Runtime.
const RegistrationName = "CUDA"

// EPName is the execution-provider name that the CUDA provider's devices
// carry (ONNX Runtime's name for its CUDA provider; not yet checked on a GPU).
const EPName = "CUDAExecutionProvider"

// ErrNotBuilt is returned by every function of a binary built without the
// admpo_cuda tag.
var ErrNotBuilt = errors.New("cudaep: built without the admpo_cuda tag (rebuild with `go build -tags admpo_cuda`)")

// Device is one OrtEpDevice: an execution provider paired with a hardware
// device it can run on.
type Device struct {
	Index    int    // position in ONNX Runtime's GetEpDevices list
	EP       string // execution provider, e.g. "CPUExecutionProvider"
	Vendor   string // the provider's vendor
	Hardware string // "cpu", "gpu" or "npu"
	VendorID uint32 // the hardware's PCI vendor id (0x10de for NVIDIA)
	DeviceID uint32
}

// NVIDIAVendorID is the PCI vendor id of NVIDIA hardware.
const NVIDIAVendorID = 0x10de

// String describes the device for messages, e.g.
// "#1 CUDAExecutionProvider (NVIDIA, gpu, vendor 0x10de, device 0x2330)".
func (d Device) String() string {
	return fmt.Sprintf("#%d %s (%s, %s, vendor %#04x, device %#04x)", d.Index, d.EP, d.Vendor, d.Hardware, d.VendorID, d.DeviceID)
}

// PickCUDA chooses the device to run the CUDA provider on among devs (the
// answer of Devices): the first whose EP is EPName, else the first GPU
// device of NVIDIA (NVIDIAVendorID) from a provider other than ONNX
// Runtime's CPU provider. The fallback covers a provider library that names
// its provider differently from EPName. With no such device the error
// lists every device found.
func PickCUDA(devs []Device) (Device, error) {
	for _, d := range devs {
		if d.EP == EPName {
			return d, nil
		}
	}
	for _, d := range devs {
		if d.Hardware == "gpu" && d.VendorID == NVIDIAVendorID && d.EP != "CPUExecutionProvider" {
			return d, nil
		}
	}
	have := make([]string, len(devs))
	for i, d := range devs {
		have[i] = d.String()
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	return Device{}, fmt.Errorf("cudaep: no device for %s and no NVIDIA GPU device (vendor %#04x) in ONNX Runtime; devices found: %s (is the CUDA provider library registered? ONNX Runtime finds GPUs through /sys/class/drm/card*/device/vendor, 0x10de for NVIDIA)",
		EPName, NVIDIAVendorID, strings.Join(have, "; "))
}
