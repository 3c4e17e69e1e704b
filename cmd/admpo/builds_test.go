package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/admpo/admpo/rundir"
)

// TestRunRecordsItsBuilds: a run's start and each resume add a line to
// builds.txt with the step it starts from and this executable's SHA-256;
// a resume by another binary warns that the run now mixes builds, a resume
// by the same one does not; a refused resume records nothing.
func TestRunRecordsItsBuilds(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	digest := hex.EncodeToString(sum[:])[:16]

	dir := filepath.Join(t.TempDir(), "run")
	// train runs the command and returns what it wrote on stderr.
	train := func(args ...string) (string, error) {
		t.Helper()
		return captureFile(t, &os.Stderr, func() error {
			_, err := captureStdout(t, func() error { return trainOnline(args) })
			return err
		})
	}
	builds := func(want int) []rundir.Build {
		t.Helper()
		b, err := rundir.Dir(dir).Builds()
		if err != nil || len(b) != want {
			t.Fatalf("builds.txt: %d lines (%v), want %d", len(b), err, want)
		}
		return b
	}
	if _, err := train("--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20",
		"--out", dir); err != nil {
		t.Fatal(err)
	}
	b := builds(1)
	if b[0].Step != 0 || b[0].Binary != digest || !strings.Contains(b[0].Version, runtime.Version()) {
		t.Errorf("start recorded as %+v, want step 0, binary %s, a version line with %s", b[0], digest, runtime.Version())
	}

	// The run as if another build had run it so far.
	path := filepath.Join(dir, rundir.BuildsFile)
	text, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(text), digest, "0000000000000000", 1)), 0o644)
	stderr, err := train("--resume", dir, "--steps", "30")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "another admpo binary (0000000000000000") || !strings.Contains(stderr, "from step 40 on") {
		t.Errorf("resume by another binary warns %q", stderr)
	}
	if b := builds(2); b[1].Step != 40 || b[1].Binary != digest {
		t.Errorf("resume recorded as %+v, want step 40 (20 warm-up + 20), binary %s", b[1], digest)
	}

	if _, err := train("--resume", dir, "--steps", "40", "--seed", "3"); err == nil {
		t.Fatal("--resume with --seed was taken")
	}
	builds(2)
	stderr, err = train("--resume", dir, "--steps", "40")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("resume by the same binary warns %q", stderr)
	}
	if b := builds(3); b[2].Step != 50 {
		t.Errorf("second resume recorded at step %d, want 50", b[2].Step)
	}
}
