package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/cpukern"
)

func runDoctor(args []string) error {
	fs := newFlags("doctor")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Printf("go:           %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("MuJoCo:       %s\n", envs.MuJoCoVersion())
	fmt.Printf("BLAS:         %s, %d threads\n", blas.Describe(), blas.Threads())
	fmt.Printf("CPU kernels:  %v (best on this CPU: %v; %s overrides)\n", cpukern.Active(), cpukern.Detected(), cpukern.EnvVar)
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
