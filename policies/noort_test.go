package policies

import (
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
)

// TestGoRuntimeWithoutORT re-runs this test binary with ADMPO_ORT_LIB
// pointing at a missing file, so ONNX Runtime cannot load, and checks there
// that the pure-Go runtime still serves the policy (the monitor reports
// why it is unavailable) while the "ort" runtime fails clearly.
func TestGoRuntimeWithoutORT(t *testing.T) {
	if os.Getenv("ADMPO_POLICIES_NOORT_CHILD") == "1" {
		noORTChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoRuntimeWithoutORT$", "-test.v")
	cmd.Env = append(os.Environ(), "ADMPO_POLICIES_NOORT_CHILD=1", "ADMPO_ORT_LIB="+filepath.Join(t.TempDir(), "missing.so"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func noORTChild(t *testing.T) {
	if err := infer.Init(); !errors.Is(err, infer.ErrORTMissing) {
		t.Fatalf("ONNX Runtime loaded despite ADMPO_ORT_LIB: %v", err)
	}
	f := newFixture(t, 41, 4, 2, 3)
	dir := writeTestBundle(t, f, true)
	p, err := Open(dir, Options{Runtime: RuntimeGo})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	obs := testfix.RandNormal(rand.New(rand.NewSource(1)), 4)
	a, err := p.Act(obs)
	if err != nil {
		t.Fatal(err)
	}
	if d := testfix.MaxDiff(a, testfix.RefActor(f.actor, obs, nil)); d > 1e-5 {
		t.Fatalf("action differs by %g", d)
	}
	if _, err := p.Monitor(); err == nil || !strings.Contains(err.Error(), "needs ONNX Runtime") {
		t.Fatalf("monitor: %v", err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, infer.ErrORTMissing) {
		t.Fatalf("ort runtime without ONNX Runtime: %v", err)
	}
	t.Log("child ok")
}
