package ortskip

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/infer"
)

// IfMissing loads ONNX Runtime (infer.Init): it skips the test when the
// library is not installed (`make setup`) and fails it when the library is
// there but cannot be loaded.
func IfMissing(t testing.TB) {
	t.Helper()
	if err := infer.Init(); err != nil {
		if errors.Is(err, infer.ErrORTMissing) {
			t.Skipf("ONNX Runtime not installed (run `make setup`): %v", err)
		}
		t.Fatalf("loading ONNX Runtime: %v", err)
	}
}
