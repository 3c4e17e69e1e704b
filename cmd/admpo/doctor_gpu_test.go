package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/gpu"
)

// sha256("abc"), FIPS 180-2 appendix B.1.
const sha256ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

// fakeGPUHost builds a probe over fresh directories: libs (the loader's
// path) and ort (setup-gpu's directory), no nvidia-smi, no admpo_cuda build.
func fakeGPUHost(t *testing.T) (p gpuProbe, libs, ort string) {
	libs, ort = t.TempDir(), t.TempDir()
	return gpuProbe{
		libDirs: []string{libs},
		ortDir:  ort,
		ortLibs: []infer.GPULibrary{
			{Name: "libcore.so.1", SHA256: sha256ABC, Role: "ORT core"},
			{Name: "libprov.so", SHA256: sha256ABC, Role: "CUDA provider"},
		},
		lookPath: func(string) (string, error) { return "", errors.New("not found") },
		query:    func() (gpu.Info, error) { return gpu.Info{}, gpu.ErrNotBuilt },
		smi:      func(string) ([]string, error) { t.Fatal("nvidia-smi run although absent"); return nil, nil },
	}, libs, ort
}

func reportLine(t *testing.T, out, label string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), label+":") {
			return l
		}
	}
	t.Fatalf("no %q line in\n%s", label, out)
	return ""
}

func render(p gpuProbe) string {
	var b bytes.Buffer
	p.report(&b)
	return b.String()
}

func TestDoctorGPUNothingInstalled(t *testing.T) {
	p, _, _ := fakeGPUHost(t)
	out := render(p)
	for label, want := range map[string][]string{
		"driver":        {"MISSING", "libcuda.so.1", "install the NVIDIA driver"},
		"nvidia-smi":    {"not found"},
		"devices":       {"admpo_cuda", "no nvidia-smi"},
		"ORT core":      {"MISSING", "make setup-gpu"},
		"CUDA provider": {"MISSING", "make setup-gpu"},
		"cuBLAS 13":     {"MISSING", "LD_LIBRARY_PATH"},
		"cuBLAS 11":     {"absent", "make setup-cuda-toolkit"},
	} {
		l := reportLine(t, out, label)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("%s line %q lacks %q", label, l, w)
			}
		}
	}
}

func TestDoctorGPUEverythingPresent(t *testing.T) {
	p, libs, ort := fakeGPUHost(t)
	// A real shared library stands in for the driver: dlopen must accept it.
	real := gpu.FindLibrary("libm.so.6", gpu.LibraryDirs())
	if real == "" {
		t.Skip("libm.so.6 not found to stand in for libcuda.so.1")
	}
	if err := os.Symlink(real, filepath.Join(libs, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"libcublas.so.13", "libcublas.so.11"} {
		if err := os.WriteFile(filepath.Join(libs, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"libcore.so.1", "libprov.so"} {
		if err := os.WriteFile(filepath.Join(ort, name), []byte("abc"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.lookPath = func(string) (string, error) { return "/fake/nvidia-smi", nil }
	p.smi = func(path string) ([]string, error) {
		if path != "/fake/nvidia-smi" {
			t.Errorf("nvidia-smi run from %s", path)
		}
		return []string{"NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06"}, nil
	}
	out := render(p)
	for label, want := range map[string]string{
		"driver":        filepath.Join(libs, "libcuda.so.1") + " (loads)",
		"nvidia-smi":    "/fake/nvidia-smi",
		"device 0":      "NVIDIA H100 80GB HBM3, 81559 MiB",
		"ORT core":      filepath.Join(ort, "libcore.so.1") + " (sha256 ok)",
		"CUDA provider": filepath.Join(ort, "libprov.so") + " (sha256 ok)",
		"cuBLAS 13":     filepath.Join(libs, "libcublas.so.13"),
		"cuBLAS 11":     filepath.Join(libs, "libcublas.so.11"),
	} {
		if l := reportLine(t, out, label); !strings.Contains(l, want) || strings.Contains(l, "MISSING") {
			t.Errorf("%s line %q, want %q", label, l, want)
		}
	}

	// The CUDA driver's answer (admpo_cuda builds) wins over nvidia-smi.
	p.query = func() (gpu.Info, error) {
		return gpu.Info{Driver: "13.0", Devices: []gpu.Device{{Name: "NVIDIA H200", Memory: 141 << 30, Major: 9, Minor: 0}}}, nil
	}
	l := reportLine(t, render(p), "device 0")
	if !strings.Contains(l, "NVIDIA H200, 141.0 GiB, compute capability 9.0 (CUDA driver 13.0)") {
		t.Errorf("device line %q", l)
	}
}

func TestDoctorGPUBrokenPieces(t *testing.T) {
	p, libs, ort := fakeGPUHost(t)
	// An empty file named libcuda.so.1 is found but cannot be loaded.
	if err := os.WriteFile(filepath.Join(libs, "libcuda.so.1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ort, "libcore.so.1"), []byte("abd"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.lookPath = func(string) (string, error) { return "/fake/nvidia-smi", nil }
	p.smi = func(string) ([]string, error) { return nil, errors.New("NVIDIA-SMI has failed") }
	out := render(p)
	if l := reportLine(t, out, "driver"); !strings.Contains(l, "BROKEN") || !strings.Contains(l, "install the NVIDIA driver") {
		t.Errorf("driver line %q, want BROKEN with the fix", l)
	}
	if l := reportLine(t, out, "ORT core"); !strings.Contains(l, "CHECKSUM MISMATCH") || !strings.Contains(l, "make setup-gpu") {
		t.Errorf("ORT core line %q, want a checksum mismatch with the fix", l)
	}
	if l := reportLine(t, out, "devices"); !strings.Contains(l, "NVIDIA-SMI has failed") {
		t.Errorf("devices line %q, want nvidia-smi's failure", l)
	}
}

// doctorGPUIsInformational (a subtest of TestBinary, sharing its binary):
// with the GPU pieces of setup-gpu absent, doctor still exits 0 when the CPU
// pieces are there, and prints the GPU section naming the fix.
func doctorGPUIsInformational(t *testing.T, bin string) {
	ortLib, err := infer.LibraryPath()
	if err != nil {
		t.Skipf("ONNX Runtime is not installed (`make setup`): %v", err)
	}
	cache := t.TempDir() // holds the CPU ONNX Runtime only
	dir := filepath.Join(cache, "onnxruntime-"+infer.ORTVersion)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ortLib, filepath.Join(dir, "libonnxruntime.so.1")); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, bin, []string{"ADMPO_ORT_LIB=", "ADMPO_CACHE=" + cache, "PATH=/nonexistent"}, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "GPU (informational") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 0 with the GPU section", r.code, r.stdout, r.stderr)
	}
	if l := reportLine(t, r.stdout, "CUDA provider"); !strings.Contains(l, "MISSING") || !strings.Contains(l, "make setup-gpu") {
		t.Errorf("CUDA provider line %q, want MISSING with `make setup-gpu`", l)
	}
}
