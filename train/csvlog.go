package train

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/admpo/admpo/internal/atomicfile"
)

// The run logs progress.csv and offline.csv share these helpers: a header
// row, then one row per evaluation, rewritten on resume to the rows up to
// the checkpoint and appended to while the run goes on.

// writeCSVLog replaces the file at path atomically with header and rows.
func writeCSVLog(path string, header []string, rows [][]string) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write(header)
		cw.WriteAll(rows)
		cw.Flush()
		return cw.Error()
	})
}

// openAppend opens the log at path for appending; label names the log in
// errors ("progress", "offline log").
func openAppend(path, label string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", label, err)
	}
	return f, nil
}

// readCSVLog returns the data rows of the log at path after checking its
// header row's width and first column against header; label names the log
// in errors and kind its header ("admpo progress", "offline").
func readCSVLog(path string, header []string, label, kind string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", label, err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("train: %s: reading %s: %w", label, path, err)
	}
	if len(rows) == 0 || len(rows[0]) != len(header) || rows[0][0] != header[0] {
		return nil, fmt.Errorf("train: %s: %s has no %s header", label, path, kind)
	}
	return rows[1:], nil
}

// parseCell reads a float cell; an empty or unreadable one is NaN.
func parseCell(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if s == "" || err != nil {
		return math.NaN()
	}
	return v
}

// formatCell writes a float cell with 7 significant digits; NaN is empty.
func formatCell(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 7, 64)
}
