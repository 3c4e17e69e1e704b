package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

func writeRun(t *testing.T, dir, algo string, seed int, returns []float64) {
	t.Helper()
	writeRunConfig(t, dir, `{"algo":"`+algo+`","env":"hopper","seed":`+string(rune('0'+seed))+`}`, returns)
}

func writeRunConfig(t *testing.T, dir, cfg string, returns []float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := train.OpenProgress(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range returns {
		p.Log(train.Record{Step: (i + 1) * 1000, EvalMean: r, EvalStd: 0})
		p.Log(train.Record{Step: (i+1)*1000 + 500, EvalMean: math.NaN()}) // a row without evaluation
	}
	p.Close()
}

func TestCurvesMeanAndStandardError(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "hopper-admpo-0"), "admpo", 0, []float64{10, 20})
	writeRun(t, filepath.Join(root, "hopper-admpo-1"), "admpo", 1, []float64{14, 40})
	writeRun(t, filepath.Join(root, "hopper-sac-0"), "sac", 0, []float64{5, 6})
	runs, err := LoadRuns(filepath.Join(root, "hopper-*"))
	if err != nil {
		t.Fatal(err)
	}
	cs := Curves(runs)
	if len(cs) != 2 || cs[0].Algo != "admpo" || cs[0].Seeds != 2 || len(cs[0].Steps) != 2 {
		t.Fatalf("curves: %+v", cs)
	}
	// Two seeds 20 and 40: mean 30, sample std 14.142, SE = 14.142/sqrt(2) = 10.
	if cs[0].Mean[1] != 30 || math.Abs(cs[0].SE[1]-10) > 1e-12 || cs[0].Mean[0] != 12 || math.Abs(cs[0].SE[0]-2) > 1e-12 {
		t.Fatalf("admpo mean %v se %v, want [12 30] and [2 10]", cs[0].Mean, cs[0].SE)
	}
	if cs[1].SE[0] != 0 {
		t.Errorf("one seed must have SE 0, got %v", cs[1].SE)
	}
	var buf bytes.Buffer
	if err := Summary(&buf, runs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "30.0 ± 10.0") || !strings.Contains(buf.String(), "sac") {
		t.Errorf("summary:\n%s", buf.String())
	}
	out := filepath.Join(root, "curves.png")
	if err := Plot(cs, "hopper", "env steps", "evaluation return", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("no PNG written (%d bytes, %v)", len(b), err)
	}
	if _, err := LoadRuns(filepath.Join(root, "nothing-*")); err == nil {
		t.Error("an empty match was accepted")
	}
}

// TestAxesFollowTheRunKind: online runs are labelled env steps / evaluation
// return, offline runs (their config names a dataset) policy updates / D4RL
// normalised score where their task has reference scores (not a task
// file's, whatever its name) and evaluation return elsewhere, and a
// mixture of either kind is refused.
func TestAxesFollowTheRunKind(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "on-sac-0"), "sac", 0, []float64{1})
	off := `{"algo":"admpo","env":"hopper","seed":0,"dataset":"d/hopper-medium.hdf5","dataset_name":"hopper-medium"}`
	writeRunConfig(t, filepath.Join(root, "off-admpo-0"), off, []float64{2})
	// a task file named hopper (its evaluations are returns), and data that name no task
	file := `{"algo":"admpo","env":"hopper","env_file":"/t/hopper.yaml","seed":0,"dataset":"d/x.hdf5"}`
	writeRunConfig(t, filepath.Join(root, "file-admpo-0"), file, []float64{3})
	writeRunConfig(t, filepath.Join(root, "file-mopo-0"), `{"algo":"mopo","env":"","seed":0,"dataset":"d/x.hdf5"}`, []float64{3})
	for _, c := range []struct{ pattern, x, y string }{
		{"on-*", "env steps (warm-up included)", "evaluation return"},
		{"off-*", "policy updates", "D4RL normalised score"},
		{"file-*", "policy updates", "evaluation return"},
	} {
		runs, err := LoadRuns(filepath.Join(root, c.pattern))
		if err != nil {
			t.Fatal(err)
		}
		x, y, err := Axes(runs)
		if err != nil || x != c.x || y != c.y {
			t.Errorf("%s: axes %q, %q (%v), want %q, %q", c.pattern, x, y, err, c.x, c.y)
		}
	}
	runs, err := LoadRuns(filepath.Join(root, "o*"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Axes(runs); err == nil || !strings.Contains(err.Error(), "1 of the 2 runs are offline") {
		t.Errorf("online and offline runs together: %v, want an error", err)
	}
	if runs, err = LoadRuns(filepath.Join(root, "off-*"), filepath.Join(root, "file-*")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Axes(runs); err == nil || !strings.Contains(err.Error(), "1 of the 3 offline runs evaluate in tasks with D4RL reference scores") {
		t.Errorf("scores and returns together: %v, want an error", err)
	}
}

// TestTableAt: the table's cells are the mean ± standard error over the
// runs that evaluated at exactly that step (worked out by hand), with their
// count where some seeds have not got there, and "-" where none has.
func TestTableAt(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "hopper-admpo-0"), "admpo", 0, []float64{10, 20, 60})
	writeRun(t, filepath.Join(root, "hopper-admpo-1"), "admpo", 1, []float64{14, 40}) // not yet at 3000
	writeRun(t, filepath.Join(root, "hopper-sac-0"), "sac", 0, []float64{5})
	runs, err := LoadRuns(filepath.Join(root, "hopper-*"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := TableAt(&buf, runs, []int{2000, 2500, 3000}, 0); err != nil {
		t.Fatal(err)
	}
	// admpo at 2000: 20 and 40, mean 30, SE 10; at 2500 only rows without an
	// evaluation; at 3000 one of two seeds (60). sac: nothing after 1000.
	want := "| algo (seeds) | 2000 | 2500 | 3000 |\n|---|---|---|---|\n" +
		"| admpo (2) | 30.0 ± 10.0 | - | 60.0 ± 0.0 (1) |\n" +
		"| sac (1) | - | - | - |\n"
	if buf.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestTableAtWindow: with a window each run's cell is the mean of its
// evaluations in (step-window, step] (worked out by hand), a run must still
// have evaluated at the step, the window is clipped at the run's start, and
// a negative window is refused.
func TestTableAtWindow(t *testing.T) {
	root := t.TempDir()
	// evaluations at 1000, 2000, ... (rows at 1500, 2500, ... without one)
	writeRun(t, filepath.Join(root, "hopper-admpo-0"), "admpo", 0, []float64{10, 20, 60, 0})
	writeRun(t, filepath.Join(root, "hopper-admpo-1"), "admpo", 1, []float64{14, 40, 100}) // not at 4000
	runs, err := LoadRuns(filepath.Join(root, "hopper-*"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := TableAt(&buf, runs, []int{1000, 3000, 4000}, 2000); err != nil {
		t.Fatal(err)
	}
	// 1000 (window clipped): 10 and 14, mean 12, SE 2.
	// 3000: (1000, 3000] holds the evaluations at 2000 and 3000:
	// seed 0 (20+60)/2 = 40, seed 1 (40+100)/2 = 70; mean 55, SE 15.
	// 4000: seed 0 only, (60+0)/2 = 30.
	want := "| algo (seeds) | 1-1000 | 1001-3000 | 2001-4000 |\n|---|---|---|---|\n" +
		"| admpo (2) | 12.0 ± 2.0 | 55.0 ± 15.0 | 30.0 ± 0.0 (1) |\n"
	if buf.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	if err := TableAt(&buf, runs, []int{1000}, -1); err == nil {
		t.Fatal("a negative window was accepted")
	}
}

// TestSmooth: each smoothed evaluation is the mean of the run's
// evaluations in (step-window, step] (worked out by hand), the run's steps
// and the input stay as they were, and window 0 changes nothing.
func TestSmooth(t *testing.T) {
	runs := []Run{{Steps: []int{1000, 2000, 3000, 4000}, Returns: []float64{10, 30, 50, 90}}}
	got := Smooth(runs, 2000)
	want := []float64{10, 20, 40, 70} // 10; (10+30)/2; (30+50)/2; (50+90)/2
	if !slices.Equal(got[0].Returns, want) || !slices.Equal(got[0].Steps, runs[0].Steps) {
		t.Errorf("smoothed %v at %v, want %v", got[0].Returns, got[0].Steps, want)
	}
	if !slices.Equal(runs[0].Returns, []float64{10, 30, 50, 90}) {
		t.Errorf("the input changed: %v", runs[0].Returns)
	}
	if s := Smooth(runs, 0); !slices.Equal(s[0].Returns, runs[0].Returns) {
		t.Errorf("window 0: %v", s[0].Returns)
	}
}

// TestSummaryLastEvaluations: the summary's last-evaluations column is, per
// algorithm, the mean ± standard error over runs of each run's mean of its
// last three evaluations (a run with fewer uses what it has).
func TestSummaryLastEvaluations(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "hopper-admpo-0"), "admpo", 0, []float64{100, 10, 20, 30}) // last 3: 20
	writeRun(t, filepath.Join(root, "hopper-admpo-1"), "admpo", 1, []float64{7, 40, 50, 60})   // last 3: 50
	writeRun(t, filepath.Join(root, "hopper-sac-0"), "sac", 0, []float64{4, 8})                // last 2: 6
	runs, err := LoadRuns(filepath.Join(root, "hopper-*"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Summary(&buf, runs); err != nil {
		t.Fatal(err)
	}
	// admpo: runs 20 and 50, mean 35, sample std 21.213, SE 15.
	for _, want := range []string{"LAST 3 EVALS", "35.0 ± 15.0", "6.0 ± 0.0"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestLoadRunsSeveralPatterns: runs from several patterns are joined (a
// directory matched twice counts once, so the mean is over 2 seeds, not 3),
// a pattern that matches nothing is an error naming it, and two runs of
// the same task, algorithm and seed are refused naming both.
func TestLoadRunsSeveralPatterns(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "table", "hopper-sac-0"), "sac", 0, []float64{10})
	writeRun(t, filepath.Join(root, "table", "hopper-admpo-0"), "admpo", 0, []float64{1})
	writeRun(t, filepath.Join(root, "lr", "hopper-admpo-0"), "admpo", 0, []float64{20})
	writeRun(t, filepath.Join(root, "lr", "hopper-admpo-1"), "admpo", 1, []float64{40})
	runs, err := LoadRuns(filepath.Join(root, "table", "hopper-sac-*"), filepath.Join(root, "lr", "*"), filepath.Join(root, "lr", "hopper-admpo-1"))
	if err != nil {
		t.Fatal(err)
	}
	cs := Curves(runs)
	if len(runs) != 3 || len(cs) != 2 || cs[0].Algo != "admpo" || cs[0].Seeds != 2 || cs[0].Mean[0] != 30 {
		t.Fatalf("runs %d, curves %+v: want 3 runs, admpo over seeds 0-1 with mean 30", len(runs), cs)
	}
	if _, err := LoadRuns(); err == nil {
		t.Error("no pattern at all was accepted")
	}
	_, err = LoadRuns(filepath.Join(root, "lr", "*"), filepath.Join(root, "tabel", "*"))
	if err == nil || !strings.Contains(err.Error(), "tabel") {
		t.Errorf("a pattern matching nothing: %v, want an error naming it", err)
	}
	_, err = LoadRuns(filepath.Join(root, "lr", "*"), filepath.Join(root, "table", "*"))
	if err == nil || !strings.Contains(err.Error(), "seed 0") || !strings.Contains(err.Error(), filepath.Join(root, "table", "hopper-admpo-0")) {
		t.Errorf("admpo seed 0 twice: %v, want an error naming both runs", err)
	}
}

// TestBuildsLine: runs of one binary give one line; runs of two give a
// warning naming each binary and its runs (a run resumed by another binary
// counts under both); runs without builds.txt are counted as such.
func TestBuildsLine(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	add := func(name string, binaries ...string) {
		for i, b := range binaries {
			if err := rundir.Dir(filepath.Join(root, name)).AppendBuild(rundir.Build{Time: at, Step: 1000 * i, Binary: b, Version: "admpo " + b[:4]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	line := func(pattern string) string {
		runs, err := LoadRuns(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := BuildsLine(&buf, runs); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for i, name := range []string{"a/hopper-sac-0", "a/hopper-sac-1", "b/hopper-sac-0", "b/hopper-sac-1", "c/hopper-sac-0", "c/hopper-sac-1"} {
		writeRun(t, filepath.Join(root, name), "sac", i%2, []float64{1, 2})
	}
	add("a/hopper-sac-0", "aaaa000011112222", "aaaa000011112222")
	add("a/hopper-sac-1", "aaaa000011112222")
	add("b/hopper-sac-0", "aaaa000011112222")
	add("b/hopper-sac-1", "aaaa000011112222", "bbbb000011112222")
	add("c/hopper-sac-0", "aaaa000011112222")

	if got, want := line("a/*"), "builds: every recorded run by one binary, aaaa000011112222 (admpo aaaa)\n"; got != want {
		t.Errorf("one build: %q, want %q", got, want)
	}
	got := line("b/*")
	for _, want := range []string{"warning: the runs come from 2 admpo builds",
		"  aaaa000011112222 (admpo aaaa): hopper-sac-0, hopper-sac-1\n", "  bbbb000011112222 (admpo bbbb): hopper-sac-1\n", "builds: 2\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("two builds: %q lacks %q", got, want)
		}
	}
	if got, want := line("c/*"), "builds: every recorded run by one binary, aaaa000011112222 (admpo aaaa); 1 of 2 runs recorded none (a build before builds.txt)\n"; got != want {
		t.Errorf("one unrecorded: %q, want %q", got, want)
	}
	if got, want := line("c/hopper-sac-1"), "builds: not recorded by these runs (builds before builds.txt)\n"; got != want {
		t.Errorf("none recorded: %q, want %q", got, want)
	}
}
