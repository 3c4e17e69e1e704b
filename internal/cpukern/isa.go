package cpukern

// #cgo CFLAGS: -O3 -std=c11
// #cgo LDFLAGS: -lm
// #include "cpukern.h"
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// ISA names one of the kernels' instruction-set paths.
type ISA int

// The paths, in increasing order of capability.
const (
	Generic ISA = C.CPUKERN_GENERIC // plain C, any CPU
	AVX2    ISA = C.CPUKERN_AVX2    // AVX2 and FMA (x86-64-v3)
	AVX512  ISA = C.CPUKERN_AVX512  // AVX-512 F, VL, DQ and FMA
)

// String returns the path's name as Parse reads it.
func (i ISA) String() string {
	switch i {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("ISA(%d)", int(i))
}

// Parse reads a path name: generic, avx2 or avx512.
func Parse(s string) (ISA, error) {
	for _, i := range []ISA{Generic, AVX2, AVX512} {
		if strings.EqualFold(s, i.String()) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("cpukern: unknown kernel path %q (want generic, avx2 or avx512)", s)
}

var detected = ISA(C.cpukern_detect())

// EnvVar, when set to a path name, makes the process start on that path
// (for experiments). A name that is unknown, or a path the CPU lacks, keeps
// the best path and is reported by EnvError.
const EnvVar = "ADMPO_CPU_KERNELS"

var envErr error

func init() {
	C.cpukern_set_isa(C.int(detected))
	if s := os.Getenv(EnvVar); s != "" {
		i, err := Parse(s)
		if err == nil {
			err = Use(i)
		}
		if err != nil {
			envErr = fmt.Errorf("%s: %w", EnvVar, err)
		}
	}
}

// EnvError is why the value of EnvVar could not be used (nil when it was
// used or is unset); programs should refuse to start with it.
func EnvError() error { return envErr }

// Detected is the best path this CPU supports.
func Detected() ISA { return detected }

// Active is the path in use.
func Active() ISA { return ISA(C.cpukern_isa) }

// Supported lists the paths this CPU can run, from the plainest.
func Supported() []ISA {
	var s []ISA
	for i := Generic; i <= detected; i++ {
		s = append(s, i)
	}
	return s
}

// Use switches every kernel to path i. It fails for a path this CPU lacks.
// It is not safe to call while kernels run in other goroutines.
func Use(i ISA) error {
	if i < Generic || i > detected {
		return fmt.Errorf("cpukern: this CPU cannot run the %v path (best: %v)", i, detected)
	}
	C.cpukern_set_isa(C.int(i))
	return nil
}

func f32(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}
