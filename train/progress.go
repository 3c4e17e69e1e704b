package train

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/rundir"
)

// Record is one row of a run's progress log (progress.csv and progress.jsonl).
// NaN marks a value that was not measured at that row (e.g. no evaluation).
type Record struct {
	Step             int       `json:"env_step"`
	Wall             float64   `json:"wall_s"`
	EvalMean         float64   `json:"eval_return_mean"`
	EvalStd          float64   `json:"eval_return_std"`
	TrainReturn      float64   `json:"train_return"` // last finished training episode
	ModelTrainLoss   float64   `json:"model_train_loss"`
	ModelHoldoutLoss float64   `json:"model_holdout_loss"`
	ModelHoldoutPerK []float64 `json:"model_holdout_mse_per_k,omitempty"`
	RolloutLen       int       `json:"rollout_len"`
	ModelBuffer      int       `json:"model_buffer"`
	Alpha            float64   `json:"alpha"`
	CriticLoss       float64   `json:"critic_loss"`
	ActorLoss        float64   `json:"actor_loss"`
	// Time is where the run's wall time went so far (progress.jsonl only).
	Time Timing `json:"time"`
}

// Timing is a run's cumulative time by phase in seconds, resumes included
// (a model round undone by an interrupt still counts): the profile of a
// run, read from progress.jsonl. What Wall has beyond their sum is the env
// steps, batch sampling, checkpoints and logs.
type Timing struct {
	Fit     float64 `json:"fit_s"`     // dynamics-model fits
	Rollout float64 `json:"rollout_s"` // model roll-outs, with the ONNX exports they need
	Update  float64 `json:"update_s"`  // policy updates (SAC or BC), batch sampling included
	Eval    float64 `json:"eval_s"`    // evaluation episodes
}

// csvHeader lists the CSV columns; the per-k holdout errors are in the JSONL only.
var csvHeader = []string{"env_step", "wall_s", "eval_return_mean", "eval_return_std", "train_return",
	"model_train_loss", "model_holdout_loss", "rollout_len", "model_buffer", "alpha", "critic_loss", "actor_loss"}

func (r Record) csvRow() []string {
	f := formatCell
	return []string{strconv.Itoa(r.Step), f(r.Wall), f(r.EvalMean), f(r.EvalStd), f(r.TrainReturn),
		f(r.ModelTrainLoss), f(r.ModelHoldoutLoss), strconv.Itoa(r.RolloutLen), strconv.Itoa(r.ModelBuffer),
		f(r.Alpha), f(r.CriticLoss), f(r.ActorLoss)}
}

// Progress appends Records to DIR/progress.csv and DIR/progress.jsonl.
type Progress struct {
	csvF, jsonF *os.File
	csv         *csv.Writer
	json        *bufio.Writer
}

// OpenProgress opens the run's progress logs for appending. Rows with an env
// step after keepUpTo (a resumed checkpoint's step) are dropped first, so a
// resumed run never logs a step twice; keepUpTo < 0 starts fresh logs.
func OpenProgress(dir string, keepUpTo int) (*Progress, error) {
	cp, jp := rundir.Dir(dir).Progress(), rundir.Dir(dir).Path(rundir.ProgressJSONLFile)
	if keepUpTo < 0 {
		if err := writeCSVLog(cp, csvHeader, nil); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(jp, nil, 0o644); err != nil {
			return nil, err
		}
	} else if err := trimProgress(cp, jp, keepUpTo); err != nil {
		return nil, err
	}
	cf, err := openAppend(cp, "progress")
	if err != nil {
		return nil, err
	}
	jf, err := openAppend(jp, "progress")
	if err != nil {
		cf.Close()
		return nil, err
	}
	return &Progress{csvF: cf, jsonF: jf, csv: csv.NewWriter(cf), json: bufio.NewWriter(jf)}, nil
}

// trimProgress rewrites both logs keeping the rows with env_step <= keep.
func trimProgress(cp, jp string, keep int) error {
	rows, err := ReadProgressCSV(cp)
	if err != nil {
		return err
	}
	var csvRows [][]string
	for _, r := range rows {
		if r.Step <= keep {
			csvRows = append(csvRows, r.csvRow())
		}
	}
	if err := writeCSVLog(cp, csvHeader, csvRows); err != nil {
		return err
	}
	f, err := os.Open(jp)
	if err != nil {
		return fmt.Errorf("train: progress: %w", err)
	}
	defer f.Close()
	var kept []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			Step int `json:"env_step"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Step <= keep {
			kept = append(append(kept, sc.Bytes()...), '\n')
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("train: progress: reading %s: %w", jp, err)
	}
	return atomicfile.WriteFile(jp, kept, 0o644)
}

// Log appends one record to both files and flushes them.
func (p *Progress) Log(r Record) error {
	p.csv.Write(r.csvRow())
	p.csv.Flush()
	if err := p.csv.Error(); err != nil {
		return fmt.Errorf("train: progress: %w", err)
	}
	b, err := json.Marshal(jsonRecord(r))
	if err != nil {
		return fmt.Errorf("train: progress: %w", err)
	}
	p.json.Write(append(b, '\n'))
	if err := p.json.Flush(); err != nil {
		return fmt.Errorf("train: progress: %w", err)
	}
	return nil
}

// Close flushes and closes the files.
func (p *Progress) Close() error {
	p.csv.Flush()
	p.json.Flush()
	e1, e2 := p.csvF.Close(), p.jsonF.Close()
	if e1 != nil {
		return e1
	}
	return e2
}

// jsonRecord converts r into a map with NaNs as nulls (encoding/json rejects NaN).
func jsonRecord(r Record) map[string]any {
	n := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	m := map[string]any{
		"env_step": r.Step, "wall_s": n(r.Wall), "eval_return_mean": n(r.EvalMean), "eval_return_std": n(r.EvalStd),
		"train_return": n(r.TrainReturn), "model_train_loss": n(r.ModelTrainLoss), "model_holdout_loss": n(r.ModelHoldoutLoss),
		"rollout_len": r.RolloutLen, "model_buffer": r.ModelBuffer, "alpha": n(r.Alpha),
		"critic_loss": n(r.CriticLoss), "actor_loss": n(r.ActorLoss), "time": r.Time,
	}
	if len(r.ModelHoldoutPerK) > 0 {
		k := make([]any, len(r.ModelHoldoutPerK))
		for i, v := range r.ModelHoldoutPerK {
			k[i] = n(v)
		}
		m["model_holdout_mse_per_k"] = k
	}
	return m
}

// ReadProgressCSV reads a progress.csv; empty cells become NaN.
func ReadProgressCSV(path string) ([]Record, error) {
	rows, err := readCSVLog(path, csvHeader, "progress", "admpo progress")
	if err != nil {
		return nil, err
	}
	var out []Record
	for i, row := range rows {
		if len(row) != len(csvHeader) {
			return nil, fmt.Errorf("train: progress: %s line %d has %d columns, want %d", path, i+2, len(row), len(csvHeader))
		}
		fl := parseCell
		step, err := strconv.Atoi(row[0])
		if err != nil {
			return nil, fmt.Errorf("train: progress: %s line %d: env_step %q", path, i+2, row[0])
		}
		rl, _ := strconv.Atoi(row[7])
		mb, _ := strconv.Atoi(row[8])
		out = append(out, Record{Step: step, Wall: fl(row[1]), EvalMean: fl(row[2]), EvalStd: fl(row[3]),
			TrainReturn: fl(row[4]), ModelTrainLoss: fl(row[5]), ModelHoldoutLoss: fl(row[6]),
			RolloutLen: rl, ModelBuffer: mb, Alpha: fl(row[9]), CriticLoss: fl(row[10]), ActorLoss: fl(row[11])})
	}
	return out, nil
}
