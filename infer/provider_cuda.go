//go:build admpo_cuda

package infer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/infer/cudaep"
)

// CUDABuilt reports whether this binary was built with the admpo_cuda tag,
// which Provider "cuda" needs for ONNX Runtime's CUDA provider library.
const CUDABuilt = true

var (
	cudaOnce sync.Once
	cudaErr  error
	cudaDev  cudaep.Device
)

// registerCUDA registers CUDAProviderPath with ONNX Runtime once per
// process and picks the device; every call returns the first one's result.
// ONNX Runtime must be loaded (Init).
func registerCUDA() (cudaep.Device, error) {
	cudaOnce.Do(func() {
		lib, err := LibraryPath()
		if err != nil {
			cudaErr = err
			return
		}
		p := CUDAProviderPath()
		if v := RuntimeVersion(); os.Getenv(CUDAProviderEnv) == "" && v != GPUORTVersion {
			// The provider library must come from the core's own release.
			cudaErr = fmt.Errorf("the CUDA provider of `make setup-gpu` (%s) is ONNX Runtime %s, but the loaded core %s is %s: set ADMPO_ORT_LIB=%s (or %s to a CUDA provider built for %s)",
				p, GPUORTVersion, lib, v, filepath.Join(GPUDir(), ortLibName), CUDAProviderEnv, v)
			return
		}
		if err := cudaep.Register(p); err != nil {
			cudaErr = fmt.Errorf("%w (set %s to use another library)", err, CUDAProviderEnv)
			return
		}
		devs, err := cudaep.Devices(lib)
		if err != nil {
			cudaErr = err
			return
		}
		cudaDev, cudaErr = cudaep.PickCUDA(devs)
	})
	return cudaDev, cudaErr
}

// appendCUDAPlugin registers the CUDA provider library (once) and appends
// its GPU device to so with the provider options opts. Where that fails and
// the loaded core is a CUDA build (GetAvailableProviders lists
// CUDAExecutionProvider), it appends the core's own CUDA provider instead.
func appendCUDAPlugin(so *ort.SessionOptions, opts map[string]string) error {
	lib, err := LibraryPath()
	if err != nil {
		return err
	}
	perr := appendPluginDevice(so, lib, opts)
	if perr == nil {
		return nil
	}
	if ps, err := cudaep.AvailableProviders(lib); err == nil && slices.Contains(ps, cudaep.EPName) {
		if err := appendCUDALegacy(so, opts); err != nil {
			return fmt.Errorf("%v; the core's own %s failed too: %w", perr, cudaep.EPName, err)
		}
		return nil
	}
	return perr
}

// appendPluginDevice appends the registered CUDA provider's device.
func appendPluginDevice(so *ort.SessionOptions, lib string, opts map[string]string) error {
	d, err := registerCUDA()
	if err != nil {
		return err
	}
	if err := cudaep.AppendDevice(so, lib, d, opts); err != nil {
		return fmt.Errorf("%w (provider options %s; %s replaces them)", err, formatOptions(opts), CUDAOptionsEnv)
	}
	return nil
}

// CUDADevice loads ONNX Runtime, registers the CUDA provider library
// (once per process) and describes the device "cuda" sessions run on.
func CUDADevice() (string, error) {
	if err := Init(); err != nil {
		return "", err
	}
	d, err := registerCUDA()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// appendCUDALegacy adds the CUDA provider compiled into the core (a CUDA
// build of ONNX Runtime) with options opts.
func appendCUDALegacy(so *ort.SessionOptions, opts map[string]string) error {
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer co.Destroy()
	if len(opts) > 0 {
		if err := co.Update(opts); err != nil {
			return fmt.Errorf("options %s: %w", formatOptions(opts), err)
		}
	}
	return so.AppendExecutionProviderCUDA(co)
}
