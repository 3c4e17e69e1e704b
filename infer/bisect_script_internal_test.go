package infer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
)

// TestGPUBisectScript runs scripts/gpu_bisect.sh end to end without a GPU:
// this test binary is its infer.test, a second CPU session its provider,
// and TestCUDAGraphFile's stand-ins its failures (a SIGSEGV wherever the
// graph has a TopK node, a mismatch wherever it has a Tanh). The search
// must name the first TopK node of the packed graph (a crash) and the first
// Tanh node of the step graph (which has no TopK: a mismatch), the indices
// read from the exported graphs here.
func TestGPUBisectScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bisect script (about 100 test processes)")
	}
	if err := Init(); err != nil {
		t.Skipf("ONNX Runtime: %v", err)
	}
	pyref.Need(t, "onnx", "numpy")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "gpu_bisect.sh"), self)
	cmd.Env = append(os.Environ(), "PROVIDER=cpu", "SIMULATE_CRASH=TopK", "SIMULATE_MISMATCH=Tanh",
		"TARGETS=small_packed small_step", "CONTROLS=small_unrolled", "PYTHON="+pyref.Python,
		"PAR=2", "BUDGET=300", "OUT="+out, "GDB=", "ADMPO_GPU_EXPORT=", "ADMPO_GPU_GRAPH=")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu_bisect.sh: %v\n%s", err, log)
	}
	b, err := os.ReadFile(filepath.Join(out, "bisect.txt"))
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, log)
	}
	report := string(b)
	work := ""
	for _, l := range strings.Split(string(log), "\n") {
		if _, w, ok := strings.Cut(l, "; work "); ok {
			work = w
		}
	}
	if work == "" {
		t.Fatalf("no work folder in the output:\n%s", log)
	}
	defer os.RemoveAll(work)
	for _, c := range []struct{ graph, op, kind string }{{"small_packed", "TopK", "crash"}, {"small_step", "Tanh", "mismatch"}} {
		model, err := os.ReadFile(filepath.Join(work, "graphs", c.graph+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		ops, err := opTypes(model)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(ops, c.op)
		if i < 0 {
			t.Fatalf("%s has no %s node", c.graph, c.op)
		}
		want := fmt.Sprintf("%s: CULPRIT node %d %s ", c.graph, i, c.op)
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
		if !strings.Contains(report, fmt.Sprintf("%s: full graph on cpu: %s", c.graph, c.kind)) {
			t.Errorf("%s: the full graph should fail with a %s:\n%s", c.graph, c.kind, report)
		}
		if !strings.Contains(report, fmt.Sprintf("%s: the prefix before it (ends at node %d ", c.graph, i-1)) {
			t.Errorf("%s: the prefix before node %d should pass:\n%s", c.graph, i, report)
		}
	}
	if !strings.Contains(report, "control small_unrolled (expected to match): mismatch") {
		t.Errorf("the control (it has Tanh nodes) should mismatch:\n%s", report)
	}
}
