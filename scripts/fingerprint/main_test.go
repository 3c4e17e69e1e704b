package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWallClockValuesAreLeftOut(t *testing.T) {
	a, err := csvWithoutWall([]byte("env_step,wall_s,eval\n1,0.5,3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != "env_step,eval\n1,3\n" {
		t.Fatalf("csv: %q", a)
	}
	j, err := jsonWithoutTimes([]byte(`{"b":1.50,"wall_s":3,"time":{"fit_s":1},"x":[{"seconds":2,"k":1e-7}],"exported":"now"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(j) != `{"b":1.50,"x":[{"k":1e-7}]}` {
		t.Fatalf("json: %s", j)
	}
}

func TestDirChangesWithContentNotWallTime(t *testing.T) {
	write := func(dir, wall, eval string) []Line {
		if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"progress.csv":        "env_step,wall_s,eval\n1," + wall + "," + eval + "\n",
			"progress.jsonl":      `{"env_step":1,"wall_s":` + wall + `,"eval":` + eval + "}\n",
			"config.json":         `{"dataset":"` + dir + `/d.hdf5"}`,
			"snapshots/p.onnx":    "onnx",
			"train.log":           wall,
			"events.out.tfevents": wall,
			"builds.txt":          wall, // when and by which binary: not the run's results
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("FINGERPRINT_ROOT", dir)
		ls, err := Dir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	base := t.TempDir()
	a := write(filepath.Join(base, "a"), "1.5", "7")
	b := write(filepath.Join(base, "b"), "9.25", "7")
	c := write(filepath.Join(base, "c"), "1.5", "8")
	if len(a) != 4 {
		t.Fatalf("want 4 items (csv, jsonl, json, snapshot), got %v", a)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("%s differs with only the wall time and the directory changed", a[i].Name)
		}
	}
	differ := 0
	for i := range a {
		if a[i].Hash != c[i].Hash {
			differ++
		}
	}
	if differ != 2 {
		t.Errorf("an evaluation change altered %d items, want 2 (progress.csv and .jsonl)", differ)
	}
}
