package cpukerntest

import (
	"testing"

	"github.com/admpo/admpo/internal/cpukern"
)

// ForEachPath runs fn as a subtest named after each supported path, with
// that path active, and restores the best path afterwards. The subtests
// must not run in parallel with others that use the kernels.
func ForEachPath(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	defer func() { _ = cpukern.Use(cpukern.Detected()) }()
	for _, isa := range cpukern.Supported() {
		if err := cpukern.Use(isa); err != nil {
			t.Fatal(err)
		}
		t.Run(isa.String(), fn)
	}
}
