package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/gpu"
	"github.com/admpo/admpo/internal/gpu/driver"
)

// gpuProbe gathers what doctor's GPU section reports; tests replace its
// fields with fake directories and commands.
type gpuProbe struct {
	libDirs  []string                            // where the dynamic loader looks
	ortDir   string                              // where `make setup-gpu` puts ONNX Runtime for CUDA
	ortLibs  []infer.GPULibrary                  // the files expected in ortDir
	lookPath func(string) (string, error)        // finds nvidia-smi
	query    func() (gpu.Info, error)            // the CUDA driver (admpo_cuda builds)
	smi      func(path string) ([]string, error) // nvidia-smi's device lines
}

// hostGPUProbe probes this host.
func hostGPUProbe() gpuProbe {
	return gpuProbe{
		libDirs:  gpu.LibraryDirs(),
		ortDir:   infer.GPUDir(),
		ortLibs:  infer.GPULibraries,
		lookPath: exec.LookPath,
		query:    driver.Query,
		smi:      nvidiaSMI,
	}
}

// nvidiaSMI asks nvidia-smi for one "name, memory, driver" line per device.
func nvidiaSMI(path string) ([]string, error) {
	out, err := exec.Command(path, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader").Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

const fixDriver = "install the NVIDIA driver (it provides libcuda.so.1 and nvidia-smi) or add its directory to LD_LIBRARY_PATH"

// report prints the GPU section. It is informational: nothing in it is
// needed for CPU use, so it never fails doctor.
func (p gpuProbe) report(w io.Writer) {
	fmt.Fprintln(w, "GPU (informational; CPU use needs none of it):")
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-16s %s\n", label+":", fmt.Sprintf(format, args...))
	}

	// Driver.
	if lib := gpu.FindLibrary("libcuda.so.1", p.libDirs); lib == "" {
		line("driver", "MISSING: libcuda.so.1 not found; %s", fixDriver)
	} else if err := gpu.Loadable(lib); err != nil {
		line("driver", "BROKEN: %v; %s", err, fixDriver)
	} else {
		line("driver", "libcuda.so.1 at %s (loads)", lib)
	}
	smiPath, smiErr := p.lookPath("nvidia-smi")
	if smiErr != nil {
		line("nvidia-smi", "not found (it comes with the NVIDIA driver)")
	} else {
		line("nvidia-smi", "%s", smiPath)
	}

	// Devices: the CUDA driver in an admpo_cuda build, else nvidia-smi.
	switch info, err := p.query(); {
	case err == nil:
		if len(info.Devices) == 0 {
			line("devices", "none (CUDA driver %s)", info.Driver)
		}
		for i, d := range info.Devices {
			line(fmt.Sprintf("device %d", i), "%s, %.1f GiB, compute capability %d.%d (CUDA driver %s)", d.Name, float64(d.Memory)/(1<<30), d.Major, d.Minor, info.Driver)
		}
	case smiErr == nil:
		lines, err := p.smi(smiPath)
		switch {
		case err != nil:
			line("devices", "nvidia-smi failed: %v", err)
		case len(lines) == 0:
			line("devices", "none (nvidia-smi lists no GPU)")
		}
		for i, l := range lines {
			line(fmt.Sprintf("device %d", i), "%s (name, memory, driver from nvidia-smi)", l)
		}
	default:
		line("devices", "unknown: %v, and no nvidia-smi", err)
	}

	// ONNX Runtime for CUDA 13 from `make setup-gpu`.
	line("ORT for CUDA", "ONNX Runtime %s built for CUDA 13, in %s", infer.GPUORTVersion, p.ortDir)
	for _, l := range p.ortLibs {
		line(l.Role, "%s", checkFile(filepath.Join(p.ortDir, l.Name), l.SHA256))
	}

	// cuBLAS: 13 for the CUDA provider (loaded at run time); 11 from
	// Debian's CUDA 11.8 toolkit.
	if lib := gpu.FindLibrary("libcublas.so.13", p.libDirs); lib != "" {
		line("cuBLAS 13", "%s", lib)
	} else {
		line("cuBLAS 13", "MISSING: libcublas.so.13 not on the loader's path (the CUDA provider needs CUDA 13's cuBLAS, cudart and cuRAND): find it with `find / -name 'libcublas.so.13*'` and add its directory to LD_LIBRARY_PATH")
	}
	if lib := gpu.FindLibrary("libcublas.so.11", p.libDirs); lib != "" {
		line("cuBLAS 11", "%s", lib)
	} else {
		line("cuBLAS 11", "absent (Debian's CUDA 11.8 toolkit: `make setup-cuda-toolkit`)")
	}
	if driver.Built {
		line("build", "admpo_cuda tag")
	} else {
		line("build", "without the admpo_cuda tag (GPU code needs `go build -tags admpo_cuda`)")
	}
}

// checkFile says whether path exists with the given SHA-256, naming the fix
// when not.
func checkFile(path, want string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("MISSING at %s: run `make setup-gpu`", path)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Sprintf("UNREADABLE %s: %v: run `make setup-gpu`", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Sprintf("CHECKSUM MISMATCH at %s (sha256 %s, want %s): run `make setup-gpu`", path, got, want)
	}
	return path + " (sha256 ok)"
}
