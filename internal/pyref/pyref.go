package pyref

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Python is Debian's interpreter, the one that sees python3-torch,
// python3-h5py, python3-numpy and python3-onnx.
const Python = "/usr/bin/python3"

// Need skips the test unless Python can import every module.
func Need(t testing.TB, modules ...string) {
	t.Helper()
	code := "import " + strings.Join(modules, ", ")
	if out, err := exec.Command(Python, "-c", code).CombinedOutput(); err != nil {
		t.Skipf("skipping: %s -c %q failed (%v): %s", Python, code, err, bytes.TrimSpace(out))
	}
}

// Run runs script with args and returns its standard output.
func Run(t testing.TB, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Python, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python failed: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// RunJSON runs script (from a file, one OpenMP thread), feeding it input as
// JSON on standard input, and decodes its standard output, JSON, into out.
func RunJSON(t testing.TB, script string, input, out any) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ref.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python, path)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("python reference failed: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("decoding python output: %v\n%s", err, res)
	}
}
