//go:build admpo_cuda

package cudaep_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/infer/cudaep"
	"github.com/admpo/admpo/internal/gpu"
	"github.com/admpo/admpo/onnx"
)

// These tests use ONNX Runtime's built-in CPU provider and the error paths:
// none of them needs (or uses) a GPU.

// ortLib loads ONNX Runtime (the library infer.Init picks) or skips.
func ortLib(t *testing.T) string {
	t.Helper()
	p, err := infer.LibraryPath()
	if err != nil {
		t.Skipf("ONNX Runtime is not installed (`make setup`): %v", err)
	}
	if err := infer.Init(); err != nil {
		t.Fatal(err)
	}
	return p
}

func newOptions(t *testing.T) *ort.SessionOptions {
	t.Helper()
	so, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { so.Destroy() })
	return so
}

func TestRegisterMissingLibrary(t *testing.T) {
	ortLib(t)
	p := filepath.Join(t.TempDir(), "libonnxruntime_providers_cuda.so")
	err := cudaep.Register(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "make setup-gpu") {
		t.Fatalf("Register(missing) = %v, want an error naming %s and `make setup-gpu`", err, p)
	}
}

// TestRegisterWithoutCUDALibraries registers the real CUDA provider from
// `make setup-gpu` on a host without the CUDA 13 libraries: ONNX Runtime
// cannot load it, and the error must say so and name what is needed.
func TestRegisterWithoutCUDALibraries(t *testing.T) {
	ortLib(t)
	p := filepath.Join(infer.GPUDir(), "libonnxruntime_providers_cuda.so")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("CUDA provider not installed (`make setup-gpu`): %v", err)
	}
	if gpu.FindLibrary("libcublas.so.13", gpu.LibraryDirs()) != "" {
		t.Skip("cuBLAS 13 is present: this test checks the error where it is absent")
	}
	err := cudaep.Register(p)
	if err == nil {
		t.Fatal("Register succeeded without the CUDA 13 libraries")
	}
	t.Log(err)
	for _, want := range []string{p, "cannot open shared object file", "LD_LIBRARY_PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	lib, _ := infer.LibraryPath()
	devs, err := cudaep.Devices(lib)
	if err == nil {
		for _, d := range devs {
			if d.EP == cudaep.EPName {
				t.Errorf("a failed registration left a %s device", cudaep.EPName)
			}
		}
	}
}

// TestDevicesListsCPU: ONNX Runtime always has its CPU provider on a CPU
// device (OrtHardwareDeviceType_CPU).
func TestDevicesListsCPU(t *testing.T) {
	devs, err := cudaep.Devices(ortLib(t))
	if err != nil {
		t.Fatal(err)
	}
	found := slices.ContainsFunc(devs, func(d cudaep.Device) bool {
		return d.EP == "CPUExecutionProvider" && d.Hardware == "cpu"
	})
	if !found {
		t.Fatalf("devices %+v lack CPUExecutionProvider on a cpu device", devs)
	}
}

func TestDevicesWrongLibrary(t *testing.T) {
	ortLib(t)
	if _, err := cudaep.Devices(filepath.Join(t.TempDir(), "libonnxruntime.so.1")); err == nil || !strings.Contains(err.Error(), "is loaded from") {
		t.Fatalf("Devices(not loaded) = %v, want an error saying no ONNX Runtime is loaded from it", err)
	}
}

// TestSameEnv: the shim reaches onnxruntime_go's OrtEnv through CreateEnv,
// which must hand out the process's single env.
func TestSameEnv(t *testing.T) {
	same, err := cudaep.SameEnv(ortLib(t))
	if err != nil || !same {
		t.Fatalf("SameEnv = %v, %v; want true", same, err)
	}
}

// TestOptionsPointer: an entry set through onnxruntime_go is read back
// through the C API on the pointer the shim extracts.
func TestOptionsPointer(t *testing.T) {
	lib := ortLib(t)
	so := newOptions(t)
	if err := so.AddSessionConfigEntry("admpo.cudaep.test", "42"); err != nil {
		t.Fatal(err)
	}
	got, err := cudaep.ConfigEntry(so, lib, "admpo.cudaep.test")
	if err != nil || got != "42" {
		t.Fatalf("config entry = %q, %v; want 42", got, err)
	}
}

func TestAppendWithoutDevice(t *testing.T) {
	lib := ortLib(t)
	err := cudaep.Append(newOptions(t), lib, cudaep.EPName, map[string]string{"device_id": "0"})
	if err == nil || !strings.Contains(err.Error(), "no device for "+cudaep.EPName) || !strings.Contains(err.Error(), "CPUExecutionProvider") {
		t.Fatalf("Append(CUDA, unregistered) = %v, want an error naming the missing provider and the ones present", err)
	}
	if err := cudaep.Append(nil, lib, cudaep.EPName, nil); err == nil {
		t.Fatal("Append(nil options) succeeded")
	}
}

// TestAppendCPU appends the CPU provider through
// SessionOptionsAppendExecutionProvider_V2 and runs y = 2x + 1 with it.
func TestAppendCPU(t *testing.T) {
	lib := ortLib(t)
	so := newOptions(t)
	if err := cudaep.Append(so, lib, "CPUExecutionProvider", nil); err != nil {
		t.Fatal(err)
	}
	g := onnx.NewGraph("affine", "y = 2x + 1")
	x := g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Fixed(3))
	y := g.Op("Add", []string{g.Op("Mul", []string{x, g.Scalar("two", 2)}), g.Scalar("one", 1)})
	g.Output(y, "y", onnx.Float, onnx.Fixed(1), onnx.Fixed(3))
	model, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{"x"}, []string{"y"}, so)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	in, err := ort.NewTensor(ort.NewShape(1, 3), []float32{-1, 0, 2.5})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	out := []ort.Value{nil}
	if err := s.Run([]ort.Value{in}, out); err != nil {
		t.Fatal(err)
	}
	defer out[0].Destroy()
	got := out[0].(*ort.Tensor[float32]).GetData()
	for i, want := range []float32{-1, 1, 6} {
		if got[i] != want {
			t.Fatalf("y = %v, want [-1 1 6]", got)
		}
	}
}

// TestAppendDeviceCPU appends ONNX Runtime's CPU device by its index
// (AppendDevice, the call AppendCUDA ends in).
func TestAppendDeviceCPU(t *testing.T) {
	lib := ortLib(t)
	devs, err := cudaep.Devices(lib)
	if err != nil {
		t.Fatal(err)
	}
	var cpu *cudaep.Device
	for i := range devs {
		if devs[i].EP == "CPUExecutionProvider" {
			cpu = &devs[i]
		}
	}
	if cpu == nil {
		t.Fatalf("no CPU device in %v", devs)
	}
	if err := cudaep.AppendDevice(newOptions(t), lib, *cpu, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	moved := *cpu
	moved.Index = len(devs) + 3
	if err := cudaep.AppendDevice(newOptions(t), lib, moved, nil); err == nil || !strings.Contains(err.Error(), "no longer") {
		t.Fatalf("AppendDevice(index past the list) = %v, want an error", err)
	}
}

// TestAppendCUDAWithoutGPU: without a registered CUDA provider there is no
// device to pick, and the error lists the CPU device that was found.
func TestAppendCUDAWithoutGPU(t *testing.T) {
	lib := ortLib(t)
	if os.Getenv("ADMPO_GPU_TEST") == "1" {
		t.Skip("ADMPO_GPU_TEST=1: a CUDA provider may be registered in this process")
	}
	_, err := cudaep.AppendCUDA(newOptions(t), lib, nil)
	if err == nil || !strings.Contains(err.Error(), "CPUExecutionProvider (") || !strings.Contains(err.Error(), "devices found") {
		t.Fatalf("AppendCUDA without a GPU = %v, want an error listing the devices found", err)
	}
}

// TestAvailableProviders: every core has its CPU provider.
func TestAvailableProviders(t *testing.T) {
	ps, err := cudaep.AvailableProviders(ortLib(t))
	if err != nil {
		t.Fatal(err)
	}
	found := slices.Contains(ps, "CPUExecutionProvider")
	if !found {
		t.Fatalf("AvailableProviders = %v, want CPUExecutionProvider among them", ps)
	}
	t.Logf("providers compiled into the core: %v", ps)
}
