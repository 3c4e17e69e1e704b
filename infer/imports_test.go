package infer

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimePackagesLinkNoTrainingCode enforces the import direction: a
// service that only runs a policy must not link the training code (the
// pure-Go runtime links Gorgonia through onnx-go, which is allowed).
func TestRuntimePackagesLinkNoTrainingCode(t *testing.T) {
	for _, pkg := range []string{"github.com/admpo/admpo/infer", "github.com/admpo/admpo/policies", "github.com/admpo/admpo/serve"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range []string{"github.com/admpo/admpo/train", "github.com/admpo/admpo/models"} {
				if dep == banned {
					t.Errorf("%s depends on %s", pkg, banned)
				}
			}
		}
	}
}
