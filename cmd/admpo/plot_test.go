package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/train"
)

// TestPlotWindow: plot --at --window prints the windowed table (each cell
// the mean of the run's evaluations in the window, worked out by hand);
// --window alone smooths the drawn curves.
func TestPlotWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hopper-sac-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"algo":"sac","env":"hopper","seed":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := train.OpenProgress(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []float64{10, 30, 50, 90} {
		p.Log(train.Record{Step: (i + 1) * 1000, EvalMean: r})
	}
	p.Close()
	png := filepath.Join(t.TempDir(), "c.png")
	out, err := captureStdout(t, func() error {
		return runPlot([]string{"--runs", dir, "--out", png, "--at", "2000,4000", "--window", "2000"})
	})
	if err != nil {
		t.Fatal(err)
	}
	// (0, 2000]: 10, 30 -> 20; (2000, 4000]: 50, 90 -> 70.
	if !strings.Contains(out, "| algo (seeds) | 1-2000 | 2001-4000 |") || !strings.Contains(out, "| sac (1) | 20.0 ± 0.0 | 70.0 ± 0.0 |") {
		t.Errorf("plot --window printed:\n%s", out)
	}
	if _, err := captureStdout(t, func() error { return runPlot([]string{"--runs", dir, "--out", png, "--window", "2000"}) }); err != nil {
		t.Errorf("plot --window without --at: %v", err)
	}
}
