package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
)

// TestBenchRolloutCPUProfile: bench rollout --cpuprofile writes a profile
// (gzip-compressed protobuf, as runtime/pprof writes it) and a path it
// cannot create is an error naming the flag.
func TestBenchRolloutCPUProfile(t *testing.T) {
	ortskip.IfMissing(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	args := []string{"rollout", "--engines", "direct", "--rows", "4", "--horizon", "1", "--m", "2", "--repeats", "1", "--json"}
	if _, err := captureStdout(t, func() error { return runBench(append(args, "--cpuprofile", prof)) }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, not gzip", prof, len(b))
	}
	_, err = captureStdout(t, func() error {
		return runBench(append(args, "--cpuprofile", filepath.Join(dir, "missing", "cpu.pprof")))
	})
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("unwritable profile path: %v, want an error naming --cpuprofile", err)
	}
}
