package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBinary compiles admpo once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "admpo")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type result struct {
	stdout, stderr string
	code           int
}

func runBin(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("GPU section is informational", func(t *testing.T) { doctorGPUIsInformational(t, bin) })

	t.Run("missing ONNX Runtime fails cleanly", func(t *testing.T) {
		r := runBin(t, bin, []string{"ADMPO_ORT_LIB=", "ADMPO_CACHE=" + t.TempDir()}, "doctor")
		if r.code != 1 || !strings.Contains(r.stderr, "ONNX Runtime shared library not found") || !strings.Contains(r.stderr, "make setup") {
			t.Fatalf("exit %d, stderr %q: want exit 1 naming the missing library and `make setup`", r.code, r.stderr)
		}
		r = runBin(t, bin, []string{"ADMPO_ORT_LIB=/nonexistent/libonnxruntime.so"}, "doctor")
		if r.code != 1 || !strings.Contains(r.stderr, "/nonexistent/libonnxruntime.so") {
			t.Fatalf("exit %d, stderr %q: want exit 1 naming ADMPO_ORT_LIB's path", r.code, r.stderr)
		}
		junk := filepath.Join(t.TempDir(), "libonnxruntime.so")
		if err := os.WriteFile(junk, []byte("not a library"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = runBin(t, bin, []string{"ADMPO_ORT_LIB=" + junk}, "doctor")
		if r.code != 1 || !strings.Contains(r.stderr, "loading ONNX Runtime") {
			t.Fatalf("exit %d, stderr %q: want exit 1 for a file that is not a library", r.code, r.stderr)
		}
	})

	t.Run("envs list", func(t *testing.T) {
		r := runBin(t, bin, nil, "envs", "list")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"hopper  ", "walker2d", "halfcheetah", "ant", "humanoid", "inverted-pendulum", "2.2.2"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("envs list lacks %q:\n%s", want, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "hopper             11   3    0.008") {
			t.Errorf("hopper row wrong:\n%s", r.stdout)
		}
	})

	t.Run("envs run is deterministic", func(t *testing.T) {
		episodes := func(seed string) string {
			r := runBin(t, bin, nil, "envs", "run", "--env", "hopper", "--episodes", "3", "--seed", seed)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 4 || !strings.HasPrefix(lines[0], "episode 1: return ") || !strings.Contains(lines[3], "env steps/s") {
				t.Fatalf("unexpected output:\n%s", r.stdout)
			}
			return strings.Join(lines[:3], "\n") // the last line holds the timing
		}
		a, b, c := episodes("1"), episodes("1"), episodes("2")
		if a != b {
			t.Errorf("same seed, different episodes:\n%s\n---\n%s", a, b)
		}
		if a == c {
			t.Errorf("seeds 1 and 2 gave the same episodes:\n%s", a)
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		if r := runBin(t, bin, nil, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "unknown command") {
			t.Errorf("unknown command: exit %d, %q", r.code, r.stderr)
		}
		if r := runBin(t, bin, nil, "envs", "run", "--episodes", "0"); r.code != 2 {
			t.Errorf("--episodes 0: exit %d, %q", r.code, r.stderr)
		}
		if r := runBin(t, bin, nil, "envs", "run", "--env", "nope"); r.code != 2 || !strings.Contains(r.stderr, "unknown task") { // a usage error, as everywhere
			t.Errorf("unknown task: exit %d, %q", r.code, r.stderr)
		}
		if r := runBin(t, bin, nil, "envs", "run", "--help"); r.code != 0 || !strings.Contains(r.stdout, "--episodes") {
			t.Errorf("--help: exit %d, %q", r.code, r.stdout)
		}
	})
}

// TestPipelineEndToEnd runs the quick pipeline with a tiny budget: training,
// export, roll-out benchmark and evaluation must all happen, the bundle must
// verify, and both runtimes must play the same episodes.
func TestPipelineEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end pipeline skipped in -short mode")
	}
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "pipe")
	r := runBin(t, bin, nil, "pipeline", "--steps", "400", "--rollout-rows", "200", "--episodes", "2", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"== 1/4", "== 2/4", "== 3/4", "== 4/4", "transitions/s", "runtime ort", "runtime go"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("pipeline output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "runtimes' returns differ") {
		t.Errorf("ORT and pure-Go runtimes played different episodes:\n%s", r.stdout)
	}
	for _, f := range []string{"run/policy.onnx", "run/adm.onnx", "run/progress.csv", "bundle/manifest.json", "bundle/adm.onnx"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// A second run replaces the earlier pipeline output; a foreign directory is refused.
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "precious.txt"), []byte("x"), 0o644)
	if r := runBin(t, bin, nil, "pipeline", "--out", foreign); r.code == 0 || !strings.Contains(r.stderr, "not an earlier pipeline") {
		t.Errorf("pipeline over a foreign directory: exit %d, %q", r.code, r.stderr)
	}
}
