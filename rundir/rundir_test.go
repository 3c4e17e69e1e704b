package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestKindAndFiles(t *testing.T) {
	d := Dir(t.TempDir())
	if d.HasRun() || d.Finished() {
		t.Fatal("an empty directory holds no run")
	}
	if _, err := d.ReadKind(); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Fatalf("ReadKind of an empty directory: %v", err)
	}
	for _, c := range []struct {
		config string
		want   Kind
	}{{`{"env":"hopper","algo":"admpo"}`, Online}, {`{"dataset":"data/hopper-medium.hdf5","algo":"mopo"}`, Offline}} {
		if err := os.WriteFile(filepath.Join(string(d), "config.json"), []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		if k, err := d.ReadKind(); err != nil || k != c.want {
			t.Errorf("%s: kind %q, %v; want %q", c.config, k, err, c.want)
		}
	}
	if !d.HasRun() || d.Finished() {
		t.Error("a run with config.json and no policy.onnx: HasRun true, Finished false")
	}
	if err := os.WriteFile(filepath.Join(string(d), "policy.onnx"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !d.Finished() {
		t.Error("policy.onnx written: Finished")
	}
	if _, err := KindOf([]byte("{")); err == nil {
		t.Error("a truncated config.json must be an error")
	}
	if d.Checkpoint() != filepath.Join(string(d), "checkpoint.ckpt") || d.Progress() != filepath.Join(string(d), "progress.csv") {
		t.Errorf("paths: %s %s", d.Checkpoint(), d.Progress())
	}
}

// TestLeaf: rundir imports no other admpo package, so the runtime packages
// (infer, policies, serve) may use it without linking training code.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/admpo/admpo/rundir").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/admpo/admpo/") && dep != "github.com/admpo/admpo/rundir" {
			t.Errorf("rundir depends on %s", dep)
		}
	}
}
