package testfix

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/infer"
)

// OpenRunPolicy opens the final policy (policy.onnx) of the run in dir on
// ONNX Runtime with the default options; the test's cleanup closes it.
func OpenRunPolicy(t testing.TB, dir string) *infer.Policy {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "policy.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := infer.OpenPolicy(b, infer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
