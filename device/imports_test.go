package device

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/admpo/admpo/"

func deps(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestDeviceSitsAtTheBottom: the device packages (tests aside) link no admpo
// package outside device/ and internal/, and not Gorgonia's graph library
// (gorgonia.org/cu, the CUDA driver binding, is allowed).
func TestDeviceSitsAtTheBottom(t *testing.T) {
	pkgs := []string{mod + "device", mod + "device/emu", mod + "device/nn", mod + "device/kernels",
		mod + "device/devicetest", mod + "device/cuda", mod + "device/cuda/cublas", mod + "device/sacdev",
		mod + "device/admdev", mod + "device/ensdev", mod + "device/rolldev"}
	for _, tags := range []string{"", "admpo_cuda"} {
		for _, dep := range deps(t, append([]string{"-tags=" + tags}, pkgs...)...) {
			if strings.HasPrefix(dep, mod) && !under(dep, mod+"device") && !under(dep, mod+"internal") {
				t.Errorf("tags %q: the device packages depend on %s", tags, dep)
			}
			if under(dep, "gorgonia.org/gorgonia") {
				t.Errorf("tags %q: the device packages depend on %s", tags, dep)
			}
		}
	}
}

// TestRuntimeLinksNoDevice: what runs a trained policy never links the
// training device layer.
func TestRuntimeLinksNoDevice(t *testing.T) {
	for _, dep := range deps(t, "-tags=admpo_cuda", mod+"infer/...", mod+"policies/...", mod+"serve/...") {
		if under(dep, mod+"device") {
			t.Errorf("infer, policies or serve depend on %s", dep)
		}
	}
}
