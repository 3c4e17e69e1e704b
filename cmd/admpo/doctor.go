package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
)

func init() {
	register(&command{name: "doctor", summary: "check that MuJoCo, OpenBLAS and ONNX Runtime are installed and usable; report the GPU pieces", run: runDoctor})
}

func runDoctor(args []string) error {
	fs := newFlags("doctor", "doctor",
		"Checks the native libraries admpo needs and prints what it found. Exits non-zero with the\n"+
			"command that fixes it when something is missing. ONNX Runtime is searched at $ADMPO_ORT_LIB,\n"+
			"else in the cache directory that `make setup` fills ($ADMPO_CACHE, $XDG_CACHE_HOME/admpo or\n"+
			"~/.cache/admpo).\n\n"+
			"A GPU section follows for information only (it never makes doctor fail): the NVIDIA driver\n"+
			"(libcuda.so.1, nvidia-smi), the devices, ONNX Runtime's CUDA provider from `make setup-gpu`\n"+
			"(checksums verified) and cuBLAS, each missing piece with the command that fixes it.")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Printf("go:           %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("MuJoCo:       %s\n", envs.MuJoCoVersion())
	fmt.Printf("BLAS:         %s, %d threads\n", blas.Describe(), blas.Threads())
	err := checkORT()
	hostGPUProbe().report(os.Stdout)
	return err
}

// checkORT prints the ONNX Runtime line; its error fails doctor.
func checkORT() error {
	p, err := infer.LibraryPath()
	if err != nil {
		fmt.Printf("ONNX Runtime: MISSING\n")
		return err
	}
	if err := infer.Init(); err != nil {
		fmt.Printf("ONNX Runtime: %s (failed to load)\n", p)
		return err
	}
	fmt.Printf("ONNX Runtime: %s (loaded, version %s)\n", p, infer.RuntimeVersion())
	return nil
}
