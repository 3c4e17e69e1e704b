package infer

import (
	"os/exec"
	"strings"
	"testing"
)

// deps returns the packages pkg links (go list -deps, without tests).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// under reports whether pkg is root or a package below it.
func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestTrainingPartsImportNoLoop: the parts of training (buffers, the
// policy updates, the dynamics models) sit below the training loops and
// never import them.
func TestTrainingPartsImportNoLoop(t *testing.T) {
	for _, pkg := range []string{"buffer", "sac", "dynamics"} {
		for _, dep := range deps(t, "github.com/admpo/admpo/"+pkg) {
			if under(dep, "github.com/admpo/admpo/train") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestCollectionSitsOnTraining: collect drives the online loop (behaviour
// runs), so it may import train, but train must never import collect nor
// experiments (which holds the offline diagnosis).
func TestCollectionSitsOnTraining(t *testing.T) {
	const mod = "github.com/admpo/admpo/"
	for _, dep := range deps(t, mod+"train") {
		for _, above := range []string{"collect", "experiments"} {
			if under(dep, mod+above) {
				t.Errorf("train depends on %s", dep)
			}
		}
	}
}

// TestRuntimePackagesLinkNoTrainingCode enforces the import direction: a
// service that only runs a policy must not link the training code (train,
// models, buffer, sac, dynamics, collect and their subpackages) nor
// Gorgonia's graph library. The pure-Go
// runtime links gorgonia.org/tensor through onnx-go, which is allowed;
// infer and the ONNX names package link no gorgonia.org package at all.
func TestRuntimePackagesLinkNoTrainingCode(t *testing.T) {
	const mod = "github.com/admpo/admpo/"
	banned := []string{mod + "train", mod + "models", mod + "buffer", mod + "sac", mod + "dynamics", mod + "collect", "gorgonia.org/gorgonia"}
	for _, c := range []struct {
		pkg        string
		noGorgonia bool // no gorgonia.org package at all
	}{
		{"infer", true},
		{"infer/cudaep", true},
		{"infer/iobind", true},
		{"onnx/schema", true},
		{"policies", false},
		{"policies/goruntime", false},
		{"serve", false},
		{"evaluate", false},
	} {
		for _, dep := range deps(t, mod+c.pkg) {
			for _, b := range banned {
				if under(dep, b) {
					t.Errorf("%s depends on %s", c.pkg, dep)
				}
			}
			if c.noGorgonia && strings.HasPrefix(dep, "gorgonia.org/") {
				t.Errorf("%s depends on %s", c.pkg, dep)
			}
		}
	}
}

// TestSchemaIsALeaf: onnx/schema, shared by the exporter and the runtimes,
// links the standard library only.
func TestSchemaIsALeaf(t *testing.T) {
	const pkg = "github.com/admpo/admpo/onnx/schema"
	for _, dep := range deps(t, pkg) {
		if dep != pkg && strings.Contains(strings.Split(dep, "/")[0], ".") {
			t.Errorf("onnx/schema depends on %s", dep)
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
		{"admpo_cuda", "github.com/admpo/admpo/infer", false},
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
