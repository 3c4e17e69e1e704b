package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// SweepConfig configures the m-sweep: one ADMPO-OFF run per m and seed, all
// with the same offline config but M.
type SweepConfig struct {
	Base  train.OfflineConfig // Dataset, Env, Kind, preset values and overrides; M is set per run
	Ms    []int
	Seeds []int64
	Out   string
	Last  int // evaluations averaged for a run's score (the last ones)
	// OnStatus, when set, receives every run's status (label "m=5 seed=0").
	OnStatus func(label string, s train.Status)
}

// SweepRun is one finished run's score.
type SweepRun struct {
	M     int
	Seed  int64
	Dir   string
	Score float64   // mean normalised score of the last Last evaluations
	Final float64   // the last evaluation's score
	Curve []float64 // every evaluation's score
}

// SweepResult is the sweep's output.
type SweepResult struct {
	Runs     []SweepRun
	Ms       []int
	Mean, SE []float64 // per m, over seeds
	CSV, PNG string
}

// RunSweep runs (or resumes, or reuses when finished) every run in
// Out/runs/m<M>-seed<S> and writes m-sweep.csv and m-sweep.png.
func RunSweep(ctx context.Context, cfg SweepConfig, log io.Writer) (*SweepResult, error) {
	if len(cfg.Ms) == 0 || len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("experiments: m-sweep needs m values and seeds")
	}
	res := &SweepResult{}
	for _, m := range cfg.Ms {
		for _, seed := range cfg.Seeds {
			c := cfg.Base
			c.M, c.Seed = m, seed
			if err := c.Validate(); err != nil {
				return nil, err
			}
			dir := filepath.Join(cfg.Out, "runs", fmt.Sprintf("m%d-seed%d", m, seed))
			label := fmt.Sprintf("m=%d seed=%d", m, seed)
			if err := runOffline(ctx, c, dir, label, cfg.OnStatus, log); err != nil {
				return nil, fmt.Errorf("experiments: %s: %w", label, err)
			}
			r, err := readSweepRun(dir, cfg.Last)
			if err != nil {
				return nil, err
			}
			r.M, r.Seed = m, seed
			fmt.Fprintf(log, "%s: score %.1f (mean of the last %d evaluations), final %.1f\n", label, r.Score, min(cfg.Last, len(r.Curve)), r.Final)
			res.Runs = append(res.Runs, r)
		}
	}
	ms := append([]int(nil), cfg.Ms...)
	sort.Ints(ms)
	for _, m := range ms {
		var v []float64
		for _, r := range res.Runs {
			if r.M == m {
				v = append(v, r.Score)
			}
		}
		mean, se := meanSE(v)
		res.Ms = append(res.Ms, m)
		res.Mean = append(res.Mean, mean)
		res.SE = append(res.SE, se)
	}
	res.CSV = filepath.Join(cfg.Out, "m-sweep.csv")
	res.PNG = filepath.Join(cfg.Out, "m-sweep.png")
	rows := [][]string{{"m", "seed", "score_last_mean", "score_final", "evaluations", "run_dir"}}
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, r := range res.Runs {
		rows = append(rows, []string{strconv.Itoa(r.M), strconv.FormatInt(r.Seed, 10), g(r.Score), g(r.Final), strconv.Itoa(len(r.Curve)), r.Dir})
	}
	if err := writeCSV(res.CSV, rows); err != nil {
		return nil, err
	}
	b := cfg.Base
	title := fmt.Sprintf("%s ADMPO-OFF: %d epochs x %d updates, %d seed(s)", b.Name, b.Epochs, b.StepsPerEpoch, len(cfg.Seeds))
	if err := PlotSweep(res.Ms, res.Mean, res.SE, title, res.PNG); err != nil {
		return nil, err
	}
	return res, nil
}

// runOffline finishes the run in dir: reused when its progress log already
// reaches the last update, resumed from its checkpoint, or started.
func runOffline(ctx context.Context, c train.OfflineConfig, dir, label string, onStatus func(string, train.Status), log io.Writer) error {
	if recs, err := train.ReadProgressCSV(rundir.Dir(dir).Progress()); err == nil && len(recs) > 0 &&
		recs[len(recs)-1].Step >= c.TotalSteps() {
		if rundir.Dir(dir).Finished() {
			fmt.Fprintf(log, "%s: reusing the finished run in %s\n", label, dir)
			return nil
		}
	}
	var o *train.Offline
	var err error
	if _, serr := os.Stat(rundir.Dir(dir).Checkpoint()); serr == nil {
		if o, err = train.ResumeOffline(dir); err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: resuming %s at update %d\n", label, dir, o.Step())
	} else {
		if o, err = train.NewOffline(c, dir); err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: starting %s (%d updates)\n", label, dir, c.TotalSteps())
	}
	defer o.Close()
	if onStatus != nil {
		o.OnStatus(func(s train.Status) { onStatus(label, s) })
	}
	return o.Run(ctx)
}

// readSweepRun reads a run's evaluations (normalised scores) from its
// progress log.
func readSweepRun(dir string, last int) (SweepRun, error) {
	recs, err := train.ReadProgressCSV(rundir.Dir(dir).Progress())
	if err != nil {
		return SweepRun{}, err
	}
	r := SweepRun{Dir: dir}
	for _, rec := range recs {
		if !math.IsNaN(rec.EvalMean) {
			r.Curve = append(r.Curve, rec.EvalMean)
		}
	}
	if len(r.Curve) == 0 {
		return r, fmt.Errorf("experiments: %s has no evaluation", dir)
	}
	r.Final = r.Curve[len(r.Curve)-1]
	tail := r.Curve[len(r.Curve)-min(max(last, 1), len(r.Curve)):]
	r.Score = meanOf(tail)
	return r, nil
}

// meanSE is the mean and the standard error over values (0 for one value).
func meanSE(v []float64) (mean, se float64) {
	mean = meanOf(v)
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(v)-1)) / math.Sqrt(float64(len(v)))
}

// Summary prints the score per m (mean ± standard error over seeds).
func (r *SweepResult) Summary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "m\tSEEDS\tSCORE (MEAN ± SE)\tPER SEED")
	for i, m := range r.Ms {
		per := ""
		n := 0
		for _, run := range r.Runs {
			if run.M == m {
				per += fmt.Sprintf(" %.1f", run.Score)
				n++
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%.1f ± %.1f\t%s\n", m, n, r.Mean[i], r.SE[i], per)
	}
	return tw.Flush()
}
