package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// Run is one run directory's identity and evaluations.
type Run struct {
	Dir, Algo, Env string
	Seed           int64
	Offline        bool // an offline run: Steps count policy updates, Returns are D4RL normalised scores (if Scored)
	// Scored: an offline run's evaluations are D4RL normalised scores (its
	// task has reference scores); else they are returns, as online.
	Scored  bool
	Steps   []int     // env steps (policy updates offline) with an evaluation
	Returns []float64 // mean evaluation return (normalised score offline) at those steps
	// Builds are the admpo builds that ran it, from its builds.txt
	// (rundir.BuildsFile); none for a run of a build before that file.
	Builds []rundir.Build
}

// OnlineXLabel is the x axis of online runs: progress.csv's step counts
// every env step, the uniform warm-up included (a run's length is warm-up +
// --steps learning steps).
const OnlineXLabel = "env steps (warm-up included)"

// Axes returns the axis labels for runs, which must be all online or all
// offline runs (their steps and returns have different units).
func Axes(runs []Run) (x, y string, err error) {
	off := 0
	for _, r := range runs {
		if r.Offline {
			off++
		}
	}
	scored := 0
	for _, r := range runs {
		if r.Offline && r.Scored {
			scored++
		}
	}
	switch {
	case off == 0:
		return OnlineXLabel, "evaluation return", nil
	case off == len(runs) && scored == off:
		return "policy updates", "D4RL normalised score", nil
	case off == len(runs) && scored == 0:
		return "policy updates", "evaluation return", nil
	case off == len(runs):
		return "", "", fmt.Errorf("report: %d of the %d offline runs evaluate in tasks with D4RL reference scores (normalised scores) and the others "+
			"in tasks without (returns): plot them separately", scored, off)
	}
	return "", "", fmt.Errorf("report: %d of the %d runs are offline runs (normalised scores per update) and the others online "+
		"(returns per env step): plot them separately", off, len(runs))
}

// LoadRuns reads every run directory matching the patterns (filepath.Glob
// patterns; a directory matched by two of them counts once). Directories
// without config.json or progress.csv are errors, and so are a pattern
// that matches no run directory and two runs of the same task, algorithm
// and seed (a seed counted twice would bias the mean over seeds).
func LoadRuns(patterns ...string) ([]Run, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("report: no run directory pattern given")
	}
	var dirs []string
	seen := map[string]bool{}
	for _, pattern := range patterns {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("report: bad pattern %q: %w", pattern, err)
		}
		n := 0
		for _, d := range m {
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				continue
			}
			n++
			if c := filepath.Clean(d); !seen[c] {
				seen[c] = true
				dirs = append(dirs, d)
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("report: no run directories match %q", pattern)
		}
	}
	var runs []Run
	runOf := map[string]string{}
	for _, d := range dirs {
		b, err := os.ReadFile(rundir.Dir(d).Config())
		if err != nil {
			return nil, fmt.Errorf("report: %s is not a run directory: %w", d, err)
		}
		var cfg struct {
			Algo, Env string
			Seed      int64
			Dataset   string // set by offline runs only
			EnvFile   string `json:"env_file"` // a task file's task: no D4RL scores, whatever its name
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("report: %s/config.json: %w", d, err)
		}
		recs, err := train.ReadProgressCSV(rundir.Dir(d).Progress())
		if err != nil {
			return nil, err
		}
		builds, err := rundir.Dir(d).Builds()
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		r := Run{Dir: d, Algo: cfg.Algo, Env: cfg.Env, Seed: cfg.Seed, Offline: cfg.Dataset != "", Builds: builds}
		if _, err := datasets.NormalizedScore(cfg.Env, 0); err == nil && r.Offline && cfg.EnvFile == "" {
			r.Scored = true
		}
		task := cfg.Env
		if cfg.Dataset != "" {
			task = cfg.Dataset
		}
		key := fmt.Sprintf("%s/%s/%d", task, cfg.Algo, cfg.Seed)
		if other, ok := runOf[key]; ok {
			return nil, fmt.Errorf("report: %s and %s are both %s %s seed %d: select one of them (a seed counted twice biases the mean)",
				other, d, task, cfg.Algo, cfg.Seed)
		}
		runOf[key] = d
		for _, rec := range recs {
			if !math.IsNaN(rec.EvalMean) {
				r.Steps = append(r.Steps, rec.Step)
				r.Returns = append(r.Returns, rec.EvalMean)
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Curve is one algorithm's mean evaluation return over seeds.
type Curve struct {
	Algo  string
	Seeds int
	Steps []int
	Mean  []float64
	SE    []float64 // standard error of the mean over seeds (0 for one seed)
}

// Curves groups runs by algorithm and averages, at every env step, the runs
// that evaluated there.
func Curves(runs []Run) []Curve {
	by := map[string][]Run{}
	for _, r := range runs {
		by[r.Algo] = append(by[r.Algo], r)
	}
	var out []Curve
	for algo, rs := range by {
		vals := map[int][]float64{}
		for _, r := range rs {
			for i, s := range r.Steps {
				vals[s] = append(vals[s], r.Returns[i])
			}
		}
		c := Curve{Algo: algo, Seeds: len(rs)}
		for s := range vals {
			c.Steps = append(c.Steps, s)
		}
		sort.Ints(c.Steps)
		for _, s := range c.Steps {
			m, se := MeanSE(vals[s])
			c.Mean = append(c.Mean, m)
			c.SE = append(c.SE, se)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Algo < out[j].Algo })
	return out
}

// MeanSE is the mean and the standard error (sample std / sqrt(n)).
func MeanSE(v []float64) (mean, se float64) {
	n := float64(len(v))
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= n
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

var palette = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255}, {148, 103, 189, 255}, {140, 86, 75, 255}}

// Plot draws the curves (mean line, ±1 standard error band) with the given
// axis labels (see Axes) to out (.png or .svg by extension).
func Plot(curves []Curve, title, xLabel, yLabel, out string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	for i, c := range curves {
		col := palette[i%len(palette)]
		line := make(plotter.XYs, len(c.Steps))
		band := make(plotter.XYs, 0, 2*len(c.Steps))
		for j, s := range c.Steps {
			line[j] = plotter.XY{X: float64(s), Y: c.Mean[j]}
			band = append(band, plotter.XY{X: float64(s), Y: c.Mean[j] + c.SE[j]})
		}
		for j := len(c.Steps) - 1; j >= 0; j-- {
			band = append(band, plotter.XY{X: float64(c.Steps[j]), Y: c.Mean[j] - c.SE[j]})
		}
		if len(band) >= 3 {
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			poly.Color = color.NRGBA{col.R, col.G, col.B, 60} // not premultiplied
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%d seeds)", c.Algo, c.Seeds), l)
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, out); err != nil {
		return fmt.Errorf("report: saving %s: %w", out, err)
	}
	return nil
}

// LastK is how many of a run's last evaluations Summary averages (the
// reproduction issue's measure: the mean of the last 3 evaluations).
const LastK = 3

// Summary prints, per algorithm, the seeds, the last common evaluation step,
// the mean ± standard error there, the mean ± standard error over runs of
// each run's mean of its last LastK evaluations (fewer where a run has
// fewer), and the best mean along the curve.
func Summary(w io.Writer, runs []Run) error {
	lastK := map[string][]float64{}
	for _, r := range runs {
		if n := len(r.Returns); n > 0 {
			tail := r.Returns[max(0, n-LastK):]
			m, _ := MeanSE(tail)
			lastK[r.Algo] = append(lastK[r.Algo], m)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ALGO\tSEEDS\tLAST STEP\tRETURN (MEAN ± SE)\tLAST %d EVALS (MEAN ± SE)\tBEST MEAN\n", LastK)
	for _, c := range Curves(runs) {
		if len(c.Steps) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\n", c.Algo, c.Seeds)
			continue
		}
		last := len(c.Steps) - 1
		best := math.Inf(-1)
		for _, m := range c.Mean {
			best = math.Max(best, m)
		}
		lm, lse := MeanSE(lastK[c.Algo])
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f ± %.1f\t%.1f ± %.1f\t%.1f\n", c.Algo, c.Seeds, c.Steps[last], c.Mean[last], c.SE[last], lm, lse, best)
	}
	return tw.Flush()
}

// BuildsLine says which admpo builds ran the runs (builds.txt, by binary):
// one line when they all share one, a warning naming each build and its
// runs when they do not (a table should not mix builds), and how many runs
// recorded none (runs of builds before builds.txt).
func BuildsLine(w io.Writer, runs []Run) error {
	var order []string
	version := map[string]string{}
	runsOf := map[string][]string{}
	unrecorded := 0
	for _, r := range runs {
		if len(r.Builds) == 0 {
			unrecorded++
			continue
		}
		seen := map[string]bool{}
		for _, b := range r.Builds {
			if _, ok := version[b.Binary]; !ok {
				order = append(order, b.Binary)
				version[b.Binary] = b.Version
			}
			if !seen[b.Binary] {
				seen[b.Binary] = true
				runsOf[b.Binary] = append(runsOf[b.Binary], filepath.Base(r.Dir))
			}
		}
	}
	var err error
	say := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	switch {
	case len(order) == 1:
		say("builds: every recorded run by one binary, %s (%s)", order[0], version[order[0]])
	case len(order) > 1:
		say("warning: the runs come from %d admpo builds (a comparison should use one):\n", len(order))
		for _, b := range order {
			say("  %s (%s): %s\n", b, version[b], strings.Join(runsOf[b], ", "))
		}
		say("builds: %d", len(order))
	default:
		say("builds: not recorded by these runs (builds before builds.txt)")
	}
	if unrecorded > 0 && len(order) > 0 {
		say("; %d of %d runs recorded none (a build before builds.txt)", unrecorded, len(runs))
	}
	say("\n")
	return err
}

// TableAt writes a Markdown table of the evaluations at the given steps
// (env steps online, policy updates offline): per algorithm and step, the
// mean ± standard error over the runs that evaluated at exactly that step,
// with their count when it is not every run of the algorithm, or "-" where
// none did. With window > 0 a run's value at step s is not its evaluation
// at s but the mean of its evaluations at steps in (s-window, s] (it must
// still have evaluated at s): the 50-epoch means of a curve that swings
// from one evaluation to the next. window 0 is the evaluation at s.
func TableAt(w io.Writer, runs []Run, steps []int, window int) error {
	if window < 0 {
		return fmt.Errorf("report: window %d: want 0 (the evaluation at each step) or more steps", window)
	}
	by := map[string][]Run{}
	var algos []string
	for _, r := range runs {
		if _, ok := by[r.Algo]; !ok {
			algos = append(algos, r.Algo)
		}
		by[r.Algo] = append(by[r.Algo], r)
	}
	sort.Strings(algos)
	head, rule := "| algo (seeds) |", "|---|"
	for _, s := range steps {
		if window > 0 {
			head += fmt.Sprintf(" %d-%d |", max(s-window, 0)+1, s)
		} else {
			head += fmt.Sprintf(" %d |", s)
		}
		rule += "---|"
	}
	if _, err := fmt.Fprintf(w, "%s\n%s\n", head, rule); err != nil {
		return err
	}
	for _, a := range algos {
		line := fmt.Sprintf("| %s (%d) |", a, len(by[a]))
		for _, s := range steps {
			var v []float64
			for _, r := range by[a] {
				if x, ok := r.windowMean(s, window); ok {
					v = append(v, x)
				}
			}
			switch m, se := MeanSE(v); {
			case len(v) == 0:
				line += " - |"
			case len(v) < len(by[a]):
				line += fmt.Sprintf(" %.1f ± %.1f (%d) |", m, se, len(v))
			default:
				line += fmt.Sprintf(" %.1f ± %.1f |", m, se)
			}
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// Smooth returns copies of runs whose every evaluation is the mean of the
// run's evaluations in the window steps up to it ((step-window, step]; the
// run's start clips the first ones): curves that swing from one evaluation
// to the next become readable. window 0 returns runs as they are.
func Smooth(runs []Run, window int) []Run {
	if window <= 0 {
		return runs
	}
	out := make([]Run, len(runs))
	for i, r := range runs {
		s := r
		s.Returns = make([]float64, len(r.Returns))
		for j, step := range r.Steps {
			s.Returns[j], _ = r.windowMean(step, window)
		}
		out[i] = s
	}
	return out
}

// windowMean is the run's evaluation at step s (window 0), or the mean of
// its evaluations at steps in (s-window, s]; false when the run did not
// evaluate at s.
func (r Run) windowMean(s, window int) (float64, bool) {
	if !slices.Contains(r.Steps, s) {
		return 0, false
	}
	var sum float64
	n := 0
	for i, rs := range r.Steps {
		if rs == s || (rs > s-window && rs <= s) {
			sum += r.Returns[i]
			n++
		}
	}
	return sum / float64(n), true
}
