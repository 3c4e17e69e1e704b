package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Sources are the kernel sources that nvcc compiles (emu.h excluded).
//
//go:embed *.cu kernel.h
var Sources embed.FS

// PTX is nvcc's output for all.cu (see gen.sh).
//
//go:embed kernels.ptx
var PTX string

// HashPrefix starts the PTX line that records the sources' hash.
const HashPrefix = "// admpo-sources-sha256: "

// SourceHash is the sha256 over the names and contents of Sources, in name
// order, as gen.sh computes it.
func SourceHash() string {
	names, err := fs.Glob(Sources, "*")
	if err != nil {
		return "error: " + err.Error()
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := Sources.ReadFile(n)
		if err != nil {
			return "error: " + err.Error()
		}
		fmt.Fprintf(h, "%s\n%d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PTXHash is the sources' hash recorded in PTX, or "" if none is.
func PTXHash() string {
	for _, line := range strings.SplitN(PTX, "\n", 8) {
		if h, ok := strings.CutPrefix(line, HashPrefix); ok {
			return strings.TrimSpace(h)
		}
	}
	return ""
}
