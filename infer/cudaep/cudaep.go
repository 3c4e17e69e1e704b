package cudaep

import "errors"

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
	EP       string // execution provider, e.g. "CPUExecutionProvider"
	Vendor   string // the provider's vendor
	Hardware string // "cpu", "gpu" or "npu"
	VendorID uint32 // the hardware's PCI vendor id (0x10de for NVIDIA)
	DeviceID uint32
}
