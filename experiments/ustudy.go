package experiments

import (
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/stats"
)

// UncertaintyConfig configures the uncertainty study.
type UncertaintyConfig struct {
	Data      *datasets.Dataset
	Name      string
	Task      string
	Out       string
	ModelsDir string
	Budget    FitBudget
	// The models are fitted on the compounding-error study's training
	// episodes (same split: TestFrac of the transitions in episodes longer
	// than SplitHorizon held out), so both studies can share ModelsDir.
	TestFrac     float64
	SplitHorizon int
	PolicyPath   string // trained policy: ONNX actor, run directory or bundle ("" leaves it out)
	Starts       int    // roll-out start sequences per policy and model
	Horizon      int    // model steps per roll-out
	BCSteps      int
	BCBatch      int
	BCLR         float64
	Seed         int64
}

// UncertaintyResult is the study's output.
type UncertaintyResult struct {
	Points   []UPoint
	Stats    map[string]URollStats // key "model/policy"
	Policies []string
	Models   []string
	BCLoss   float64
	Policy   string // where the trained policy came from
	CSV, PNG string
}

// RunUncertainty rolls three policies out in the ADM and in the ensemble
// and measures, for every step, the model's uncertainty and its true
// one-step error with the MuJoCo task as ground truth; it writes
// uncertainty.csv and uncertainty.png to Out.
func RunUncertainty(cfg UncertaintyConfig, log io.Writer) (*UncertaintyResult, error) {
	split, err := SplitEpisodes(cfg.Data, cfg.TestFrac, cfg.SplitHorizon+1, cfg.Seed)
	if err != nil {
		return nil, err
	}
	ms, err := FitModels(split.Train, cfg.Budget, []string{"adm", "ensemble"}, cfg.ModelsDir, log)
	if err != nil {
		return nil, err
	}
	ts, err := NewTrueStepper(cfg.Task)
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	env, err := envs.Make(cfg.Task)
	if err != nil {
		return nil, err
	}
	low, high := env.ActionLow(), env.ActionHigh()
	env.Close()

	res := &UncertaintyResult{Stats: map[string]URollStats{}, BCLoss: math.NaN()}
	actors := []BatchActor{UniformActor{Low: low, High: high}}
	if cfg.PolicyPath != "" {
		b, desc, err := LoadPolicyONNX(cfg.PolicyPath)
		if err != nil {
			return nil, err
		}
		p, err := infer.OpenPolicy(b, infer.Options{Threads: 1})
		if err != nil {
			return nil, err
		}
		defer p.Close()
		actors = append(actors, &ONNXActor{P: p, Label: "trained policy"})
		res.Policy = desc
	}
	bc, loss, err := TrainBC(cfg.Data, low, high, cfg.BCSteps, cfg.BCBatch, cfg.BCLR, cfg.Seed)
	if err != nil {
		return nil, err
	}
	res.BCLoss = loss
	fmt.Fprintf(log, "behaviour cloning: %d updates, final MSE %.4f\n", cfg.BCSteps, loss)
	actors = append(actors, &GoActor{A: bc, Label: "behaviour (BC)"})

	replay, err := buffer.FromDataset(cfg.Data, cfg.Seed+21)
	if err != nil {
		return nil, err
	}
	start, err := replay.SampleStarts(cfg.Starts, cfg.Budget.M, rand.New(rand.NewSource(cfg.Seed+22)))
	if err != nil {
		return nil, err
	}
	mdls := []uModel{&admU{m: ms.ADM}, &ensembleU{e: ms.Ensemble}}
	task := ts.Task()
	for i, m := range mdls {
		res.Models = append(res.Models, m.name())
		for j, a := range actors {
			if i == 0 {
				res.Policies = append(res.Policies, a.Name())
			}
			rng := rand.New(rand.NewSource(cfg.Seed*1000 + int64(10*i+j)))
			pts, st, err := uncertaintyRollout(m, a, start, cfg.Horizon, ts, task, rng)
			if err != nil {
				return nil, err
			}
			res.Points = append(res.Points, pts...)
			res.Stats[m.name()+"/"+a.Name()] = st
		}
	}
	res.CSV = filepath.Join(cfg.Out, "uncertainty.csv")
	res.PNG = filepath.Join(cfg.Out, "uncertainty.png")
	rows := [][]string{{"model", "policy", "step", "uncertainty", "uncertainty_var", "error", "error_drawn"}}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, p := range res.Points {
		rows = append(rows, []string{p.Model, p.Policy, strconv.Itoa(p.Step), g(p.U), g(p.UVar), g(p.Err), g(p.ErrDrawn)})
	}
	if err := writeCSV(res.CSV, rows); err != nil {
		return nil, err
	}
	var panels [][]ScatterSet
	var titles []string
	for _, m := range res.Models {
		var sets []ScatterSet
		for _, pol := range res.Policies {
			u, e := res.Series(m, pol)
			sets = append(sets, ScatterSet{Label: pol, U: u, Err: e})
		}
		u, e := res.Series(m, "")
		label := "U^ADM"
		if m != "ADM" {
			label = "max-std (MOPO)"
		}
		titles = append(titles, fmt.Sprintf("%s %s: %s, Pearson r = %.2f", cfg.Name, m, label, stats.Pearson(u, e)))
		panels = append(panels, sets)
	}
	if err := PlotScatters(panels, titles, res.PNG); err != nil {
		return nil, err
	}
	return res, nil
}

// Series returns the uncertainties and errors of a model's points (of one
// policy, or all when policy is "").
func (r *UncertaintyResult) Series(model, policy string) (u, e []float64) {
	u, _, e = r.series(model, policy)
	return u, e
}

func (r *UncertaintyResult) series(model, policy string) (u, uVar, e []float64) {
	for _, p := range r.Points {
		if p.Model == model && (policy == "" || p.Policy == policy) {
			u = append(u, p.U)
			uVar = append(uVar, p.UVar)
			e = append(e, p.Err)
		}
	}
	return u, uVar, e
}

// Summary prints, per model and policy, the points, the skipped steps, the
// mean uncertainty and error, and the correlations.
func (r *UncertaintyResult) Summary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tPOLICY\tPOINTS\tSKIPPED (CLIPPED)\tFLAGGED BY MUJOCO\tMEAN U\tMEAN ERROR\tPEARSON\tSPEARMAN\tPEARSON (U_VAR)")
	for _, m := range r.Models {
		for _, pol := range append(append([]string(nil), r.Policies...), "") {
			u, uv, e := r.series(m, pol)
			name, skipped, warned := pol, 0, 0
			for _, p := range r.Policies {
				if pol == "" || p == pol {
					skipped += r.Stats[m+"/"+p].Skipped
					warned += r.Stats[m+"/"+p].Warned
				}
			}
			if pol == "" {
				name = "all"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.4g\t%.4g\t%.3f\t%.3f\t%.3f\n", m, name, len(u), skipped, warned, meanOf(u), meanOf(e),
				stats.Pearson(u, e), stats.Spearman(u, e), stats.Pearson(uv, e))
		}
	}
	return tw.Flush()
}

func meanOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
