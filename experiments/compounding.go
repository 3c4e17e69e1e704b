package experiments

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/internal/atomicfile"
)

// CompoundingConfig configures the compounding-error study.
type CompoundingConfig struct {
	Data        *datasets.Dataset
	Name        string // data set label for titles, e.g. "hopper-medium"
	Out         string // output directory
	ModelsDir   string // fitted models (reused when fitted with the same budget on the same data)
	Budget      FitBudget
	Horizon     int     // longest roll-out (100)
	TestFrac    float64 // share of transitions in held-out episodes (0.1)
	Stride      int     // transitions between segment starts in an episode (25)
	MaxSegments int     // segments evaluated at most (200)
	FixedK1     bool    // also roll the ADM out with k = 1 at every step
	Seed        int64
}

// CompoundingResult is the study's output.
type CompoundingResult struct {
	Curves       []Curve
	TestEpisodes int
	Segments     int
	TrainRows    int
	CSV, PNG     string
}

// RunCompounding fits the ADM, the bootstrapping RNN and the ensemble on the
// training episodes and rolls each out open-loop along held-out segments
// with the recorded actions, writing compounding-error.csv and
// compounding-error.png to Out.
func RunCompounding(cfg CompoundingConfig, log io.Writer) (*CompoundingResult, error) {
	split, err := SplitEpisodes(cfg.Data, cfg.TestFrac, cfg.Horizon+1, cfg.Seed)
	if err != nil {
		return nil, err
	}
	segs := Segments(cfg.Data, split.Test, cfg.Budget.M-1, cfg.Horizon, cfg.Stride, cfg.MaxSegments, cfg.Seed)
	if len(segs) == 0 {
		return nil, fmt.Errorf("experiments: no held-out segment of %d steps", cfg.Horizon)
	}
	fmt.Fprintf(log, "%s: %d training transitions; %d held-out episodes (%d transitions) -> %d segments of H=%d\n",
		cfg.Name, split.Train.N, len(split.Test), cfg.Data.N-split.Train.N, len(segs), cfg.Horizon)
	ms, err := FitModels(split.Train, cfg.Budget, []string{"adm", "rnn", "ensemble"}, cfg.ModelsDir, log)
	if err != nil {
		return nil, err
	}
	rules := []Rule{NewADMRoll(ms.ADM, 0, fmt.Sprintf("ADM (ADM-Roll, k~U[1,%d])", cfg.Budget.M))}
	if cfg.FixedK1 {
		rules = append(rules, NewADMRoll(ms.ADM, 1, "ADM (k=1 every step)"))
	}
	rules = append(rules, &EnsembleRoll{Model: ms.Ensemble, Label: fmt.Sprintf("ensemble (%d members, random elite)", len(ms.Ensemble.Members))},
		&BootstrapRNN{Model: ms.RNN, Label: fmt.Sprintf("bootstrapping RNN (window %d)", cfg.Budget.M)})
	res := &CompoundingResult{TestEpisodes: len(split.Test), Segments: len(segs), TrainRows: split.Train.N}
	for i, r := range rules {
		c, err := OpenLoop(r, segs, cfg.Horizon, rand.New(rand.NewSource(cfg.Seed*31+int64(i))))
		if err != nil {
			return nil, err
		}
		res.Curves = append(res.Curves, c)
	}
	res.CSV = filepath.Join(cfg.Out, "compounding-error.csv")
	res.PNG = filepath.Join(cfg.Out, "compounding-error.png")
	if err := writeCurvesCSV(res.CSV, res.Curves); err != nil {
		return nil, err
	}
	title := fmt.Sprintf("%s: open-loop compounding error (%d held-out segments)", cfg.Name, len(segs))
	if err := PlotCurves(res.Curves, title, res.PNG); err != nil {
		return nil, err
	}
	return res, nil
}

func writeCurvesCSV(path string, curves []Curve) error {
	rows := [][]string{{"model", "H", "mean_mse", "median_mse", "mean_l2", "overflowed", "segments"}}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 7, 64) }
	for _, c := range curves {
		for i, h := range c.H {
			rows = append(rows, []string{c.Name, strconv.Itoa(h), g(c.MeanMSE[i]), g(c.MedianMSE[i]), g(c.MeanL2[i]),
				strconv.Itoa(c.Overflow[i]), strconv.Itoa(c.Segments)})
		}
	}
	return writeCSV(path, rows)
}

func writeCSV(path string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return atomicfile.Write(path, 0o644, func(f io.Writer) error {
		if err := csv.NewWriter(f).WriteAll(rows); err != nil {
			return fmt.Errorf("experiments: writing %s: %w", path, err)
		}
		return nil
	})
}

// Summary prints the mean MSE of every curve at a few roll-out lengths and
// where it first overflowed.
func (r *CompoundingResult) Summary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hs := []int{1, 5, 10, 20, 50, 100}
	fmt.Fprint(tw, "MODEL")
	for _, h := range hs {
		fmt.Fprintf(tw, "\tH=%d", h)
	}
	fmt.Fprintln(tw, "\tFIRST OVERFLOW")
	for _, c := range r.Curves {
		fmt.Fprint(tw, c.Name)
		for _, h := range hs {
			if h <= len(c.MeanMSE) {
				fmt.Fprintf(tw, "\t%s", fmtErr(c.MeanMSE[h-1]))
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		first := "-"
		for i, n := range c.Overflow {
			if n > 0 {
				first = fmt.Sprintf("H=%d (%d/%d segments by H=%d)", c.H[i], c.Overflow[len(c.Overflow)-1], c.Segments, c.H[len(c.H)-1])
				break
			}
		}
		fmt.Fprintf(tw, "\t%s\n", first)
	}
	return tw.Flush()
}

func fmtErr(v float64) string {
	if v >= MaxFloat32 {
		return "overflow"
	}
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
