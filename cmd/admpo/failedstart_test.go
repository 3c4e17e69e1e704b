package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFailedStartLeavesNothing: `train online --warmup 1 --steps 1` is a
// usage error that makes no run directory; a start that fails after
// creating its run takes back what it made when the run recorded nothing
// (the directory it made, or only the entries it added to one that was
// there), and keeps everything once a checkpoint or a progress row exists.
func TestFailedStartLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "w1")
	_, err := captureStdout(t, func() error { return trainOnline([]string{"--warmup", "1", "--steps", "1", "--out", out}) })
	if exitCode(err) != 2 || !strings.Contains(fmtErr(err), "warm-up 1 is too short") {
		t.Fatalf("--warmup 1: %v (exit %d), want a usage error naming the warm-up", err, exitCode(err))
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("run directory left behind: %v", err)
	}

	header := "env_step,wall_s\n"
	write := func(dir string, files map[string]string) {
		t.Helper()
		os.MkdirAll(dir, 0o755)
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := func(dir string) []string {
		ents, _ := os.ReadDir(dir)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	started := map[string]string{"config.json": "{}", "progress.csv": header, "progress.jsonl": "", "events.out.tfevents.1": ""}
	boom := errors.New("boom")

	made := filepath.Join(tmp, "made")
	s := noteFreshStart(made)
	write(made, started)
	if err := s.failedStart(boom); !errors.Is(err, boom) || !strings.Contains(err.Error(), "removed") {
		t.Errorf("failedStart: %v", err)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("the directory the start made is still there: %v", err)
	}

	mine := filepath.Join(tmp, "mine")
	write(mine, map[string]string{"notes.txt": "keep"})
	s = noteFreshStart(mine)
	write(mine, started)
	s.failedStart(boom)
	if got := names(mine); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("the directory that was there holds %v, want only notes.txt", got)
	}

	for name, extra := range map[string]map[string]string{
		"checkpoint": {"checkpoint.ckpt": "x"},
		"row":        {"progress.csv": header + "100,1\n"},
		"jsonl":      {"progress.jsonl": "{}\n"},
	} {
		dir := filepath.Join(tmp, name)
		s := noteFreshStart(dir)
		write(dir, started)
		write(dir, extra)
		if err := s.failedStart(boom); err != boom {
			t.Errorf("%s: %v, want the error as it was", name, err)
		}
		if got := names(dir); len(got) < 4 || !slices.Contains(got, "config.json") {
			t.Errorf("%s: the run's files %v were touched", name, got)
		}
	}
}

// fmtErr is err's message, or "" for nil.
func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
