package infer

import (
	"os/exec"
	"strings"
	"testing"
)

// trainingPackages are the training code: the networks and their graphs,
// the parts of training and the training loops.
var trainingPackages = []string{"github.com/admpo/admpo/models", "github.com/admpo/admpo/buffer", "github.com/admpo/admpo/sac", "github.com/admpo/admpo/dynamics", "github.com/admpo/admpo/train"}

// TestTrainingPartsImportNoLoop: the parts of training (buffers, the
// policy updates, the dynamics models) sit below the training loops and
// never import them.
func TestTrainingPartsImportNoLoop(t *testing.T) {
	for _, pkg := range []string{"github.com/admpo/admpo/buffer", "github.com/admpo/admpo/sac", "github.com/admpo/admpo/dynamics"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/admpo/admpo/train" {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestRuntimePackagesLinkNoTrainingCode enforces the import direction: a
// service that only runs a policy must not link the training code (the
// pure-Go runtime links Gorgonia through onnx-go, which is allowed).
func TestRuntimePackagesLinkNoTrainingCode(t *testing.T) {
	for _, pkg := range []string{"github.com/admpo/admpo/infer", "github.com/admpo/admpo/infer/cudaep", "github.com/admpo/admpo/policies", "github.com/admpo/admpo/serve", "github.com/admpo/admpo/evaluate"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range trainingPackages {
				if dep == banned {
					t.Errorf("%s depends on %s", pkg, banned)
				}
			}
		}
	}
}

// TestDefaultBuildLinksNoCUDA: without the admpo_cuda tag nothing links the
// CUDA driver binding; with it, only internal/gpu/driver does (infer/cudaep
// must stay loadable, and testable, on hosts without a GPU).
func TestDefaultBuildLinksNoCUDA(t *testing.T) {
	const cu = "gorgonia.org/cu"
	for _, c := range []struct {
		tags, pkg string
		want      bool
	}{
		{"", "github.com/admpo/admpo/cmd/admpo", false},
		{"admpo_cuda", "github.com/admpo/admpo/infer/cudaep", false},
		{"admpo_cuda", "github.com/admpo/admpo/internal/gpu", false},
		{"admpo_cuda", "github.com/admpo/admpo/internal/gpu/driver", true},
	} {
		out, err := exec.Command("go", "list", "-tags="+c.tags, "-deps", c.pkg).Output()
		if err != nil {
			t.Fatalf("go list -tags=%s %s: %v", c.tags, c.pkg, err)
		}
		has := false
		for _, dep := range strings.Fields(string(out)) {
			has = has || dep == cu
		}
		if has != c.want {
			t.Errorf("-tags=%q %s depends on %s: %v, want %v", c.tags, c.pkg, cu, has, c.want)
		}
	}
}
