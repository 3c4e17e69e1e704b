package infer

import "path/filepath"

// GPUORTVersion is the ONNX Runtime release of the CUDA 13 build that
// `make setup-gpu` installs (npm packages com.github.asus4.onnxruntime and
// com.github.asus4.onnxruntime.linux-x64-gpu, version 0.4.9).
const GPUORTVersion = "1.29.0"

// GPULibrary is one shared library that `make setup-gpu` places in GPUDir,
// with the SHA-256 that scripts/setup_gpu.sh verifies.
type GPULibrary struct {
	Name   string // file name inside GPUDir
	SHA256 string // lower-case hex
	Role   string // what it is, short, for messages
}

// GPULibraries lists the files of the CUDA 13 ONNX Runtime build, core
// first. The checksums are the ones scripts/setup_gpu.sh checks.
var GPULibraries = []GPULibrary{
	{Name: "libonnxruntime.so.1", SHA256: "5715f06d8992ca8eeeddcce43df3a7d38f97d537052126f558e912cb312460ca", Role: "ORT core"},
	{Name: "libonnxruntime_providers_cuda.so", SHA256: "56cf3254b118ad837ccc4ed8f6d1b23504bbf7ef91b34cbc0b289cb7f10b3037", Role: "CUDA provider"},
	{Name: "libonnxruntime_providers_shared.so", SHA256: "c6a12593396095f5670160e284c35d1700b7708cf3037b7042e2a5200ccae772", Role: "provider bridge"},
}

// GPUDir is where `make setup-gpu` places GPULibraries:
// CacheDir()/onnxruntime-gpu-GPUORTVersion.
func GPUDir() string {
	return filepath.Join(CacheDir(), "onnxruntime-gpu-"+GPUORTVersion)
}
