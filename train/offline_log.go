package train

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/rundir"
)

// OfflineRecord is one row of offline.csv.
type OfflineRecord struct {
	Step, Epoch           int
	Wall                  float64
	ScoreMean, ScoreStd   float64 // D4RL normalised score of the evaluation episodes
	ReturnMean, ReturnStd float64 // raw returns
	Roll                  RollStats
	QMean                 float64 // mean Q1 of the last SAC batch
	BCLoss                float64 // last BC loss (bc only)
}

// RollStats summarises one model roll-out.
type RollStats struct {
	Transitions int     `json:"transitions"`
	RewardMean  float64 `json:"reward_mean"`  // penalised model reward
	UMean       float64 `json:"u_mean"`       // uncertainty U (before beta)
	UMax        float64 `json:"u_max"`        //
	PenaltyMean float64 `json:"penalty_mean"` // beta * U
	DoneFrac    float64 `json:"done_frac"`    // transitions that ended their roll-out by termination
	Seconds     float64 `json:"seconds"`
}

var offlineHeader = []string{"step", "epoch", "wall_s", "score_mean", "score_std", "return_mean", "return_std",
	"rollout_transitions", "rollout_reward_mean", "rollout_u_mean", "rollout_u_max", "rollout_penalty_mean",
	"rollout_done_frac", "q_mean", "bc_loss"}

func (r OfflineRecord) row() []string {
	f := func(v float64) string { // Inf is empty too
		if math.IsInf(v, 0) {
			return ""
		}
		return formatCell(v)
	}
	return []string{strconv.Itoa(r.Step), strconv.Itoa(r.Epoch), f(r.Wall), f(r.ScoreMean), f(r.ScoreStd),
		f(r.ReturnMean), f(r.ReturnStd), strconv.Itoa(r.Roll.Transitions), f(r.Roll.RewardMean), f(r.Roll.UMean),
		f(r.Roll.UMax), f(r.Roll.PenaltyMean), f(r.Roll.DoneFrac), f(r.QMean), f(r.BCLoss)}
}

// offlineLog appends rows to offline.csv.
type offlineLog struct {
	f *os.File
	w *csv.Writer
}

// openOfflineLog starts a fresh log (keepUpTo < 0) or keeps the rows with
// step <= keepUpTo of an existing one (resume).
func openOfflineLog(dir string, keepUpTo int) (*offlineLog, error) {
	path := filepath.Join(dir, rundir.OfflineLogFile)
	var keep [][]string
	if keepUpTo >= 0 {
		rows, err := readCSV(path)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if s, err := strconv.Atoi(r[0]); err == nil && s <= keepUpTo {
				keep = append(keep, r)
			}
		}
	}
	if err := writeCSVLog(path, offlineHeader, keep); err != nil {
		return nil, err
	}
	f, err := openAppend(path, "offline log")
	if err != nil {
		return nil, err
	}
	return &offlineLog{f: f, w: csv.NewWriter(f)}, nil
}

// readCSV returns the data rows of an offline.csv (header checked).
func readCSV(path string) ([][]string, error) {
	return readCSVLog(path, offlineHeader, "offline log", "offline")
}

// ReadOfflineLog reads offline.csv; empty cells become NaN.
func ReadOfflineLog(path string) ([]OfflineRecord, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	fl := parseCell
	var out []OfflineRecord
	for i, r := range rows {
		if len(r) != len(offlineHeader) {
			return nil, fmt.Errorf("train: offline log %s line %d has %d columns", path, i+2, len(r))
		}
		step, err1 := strconv.Atoi(r[0])
		ep, err2 := strconv.Atoi(r[1])
		n, err3 := strconv.Atoi(r[7])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("train: offline log %s line %d: bad integer", path, i+2)
		}
		out = append(out, OfflineRecord{Step: step, Epoch: ep, Wall: fl(r[2]), ScoreMean: fl(r[3]), ScoreStd: fl(r[4]),
			ReturnMean: fl(r[5]), ReturnStd: fl(r[6]),
			Roll:  RollStats{Transitions: n, RewardMean: fl(r[8]), UMean: fl(r[9]), UMax: fl(r[10]), PenaltyMean: fl(r[11]), DoneFrac: fl(r[12])},
			QMean: fl(r[13]), BCLoss: fl(r[14])})
	}
	return out, nil
}

// log appends one row and flushes it.
func (l *offlineLog) log(r OfflineRecord) error {
	l.w.Write(r.row())
	l.w.Flush()
	if err := l.w.Error(); err != nil {
		return fmt.Errorf("train: offline log: %w", err)
	}
	return nil
}

func (l *offlineLog) close() error {
	l.w.Flush()
	return l.f.Close()
}

// writeModelFitLog writes the model fit's learning curve to model_fit.csv:
// per epoch the Adam steps so far, the wall time, the train NLL, the holdout
// MSE, early stopping's metric and (ADM) the holdout MSE of every k.
func writeModelFitLog(dir string, curve []dynamics.FitEpoch) error {
	header := []string{"epoch", "adam_steps", "wall_s", "train_nll", "holdout_mse", "stop_metric"}
	if len(curve) > 0 {
		for k := range curve[0].HoldoutPerK {
			header = append(header, fmt.Sprintf("holdout_mse_k%d", k+1))
		}
	}
	rows := make([][]string, 0, len(curve))
	for _, e := range curve {
		r := []string{strconv.Itoa(e.Epoch), strconv.Itoa(e.AdamSteps), formatCell(e.Seconds), formatCell(e.TrainLoss),
			formatCell(e.HoldoutLoss), formatCell(e.StopMetric)}
		for _, v := range e.HoldoutPerK {
			r = append(r, formatCell(v))
		}
		rows = append(rows, r)
	}
	if err := writeCSVLog(filepath.Join(dir, rundir.ModelFitFile), header, rows); err != nil {
		return fmt.Errorf("train: model fit log: %w", err)
	}
	return nil
}
