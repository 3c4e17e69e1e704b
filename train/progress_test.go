package train

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestProgressResumeDropsLaterRows(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProgress(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1000; s <= 5000; s += 1000 {
		r := Record{Step: s, Wall: float64(s) / 100, EvalMean: float64(s) / 10, EvalStd: math.NaN(), RolloutLen: s / 1000,
			ModelHoldoutPerK: []float64{0.1, 0.2}}
		if err := p.Log(r); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	// Resume from a checkpoint at step 3000: rows 4000 and 5000 go, new rows append.
	p, err = OpenProgress(dir, 3000)
	if err != nil {
		t.Fatal(err)
	}
	p.Log(Record{Step: 4000, EvalMean: 1, EvalStd: 2})
	p.Close()
	rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []int{}
	for _, r := range rows {
		steps = append(steps, r.Step)
	}
	if len(steps) != 4 || steps[0] != 1000 || steps[2] != 3000 || steps[3] != 4000 {
		t.Fatalf("steps after resume: %v, want [1000 2000 3000 4000]", steps)
	}
	if rows[1].EvalMean != 200 || !math.IsNaN(rows[1].EvalStd) || rows[1].RolloutLen != 2 || rows[3].EvalStd != 2 {
		t.Fatalf("row values: %+v / %+v", rows[1], rows[3])
	}
	f, _ := os.Open(filepath.Join(dir, "progress.jsonl"))
	defer f.Close()
	sc := bufio.NewScanner(f)
	var js []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad JSONL line %q: %v", sc.Text(), err)
		}
		js = append(js, m)
	}
	if len(js) != 4 || js[0]["eval_return_std"] != nil || js[0]["model_holdout_mse_per_k"] == nil || js[3]["env_step"].(float64) != 4000 {
		t.Fatalf("JSONL rows: %v", js)
	}
	if _, err := ReadProgressCSV(filepath.Join(dir, "progress.jsonl")); err == nil {
		t.Error("a non-CSV file was read as progress")
	}
}
