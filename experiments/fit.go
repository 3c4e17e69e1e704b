package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/models"
)

// FitBudget sizes the three dynamics models and caps their fits. The
// paper's sizes are an ADM (and bootstrapping RNN) of 3 GRU layers of 200
// with 4 ResBlocks, and 7 members of 4 x 200 with 5 elites, each fitted to
// early stopping; the caps make the studies fit a shared 2-core machine.
type FitBudget struct {
	M                      int     `json:"m"` // ADM backtracking length and the RNN's sequence length
	Hidden, Layers, Blocks int     // ADM / RNN network
	ADMLR                  float64 `json:"adm_lr"`
	ADMEpochs              int     `json:"adm_max_epochs"`      // 0: until early stopping
	ADMSteps               int     `json:"adm_steps_per_epoch"` // 0: a full pass
	ADMPatience            int     `json:"adm_patience"`
	Members, Elites        int
	EnsHidden              []int `json:"ensemble_hidden"`
	EnsEpochs              int   `json:"ensemble_max_epochs"`
	EnsSteps               int   `json:"ensemble_steps_per_epoch"`
	EnsPatience            int   `json:"ensemble_patience"`
	Seed                   int64 `json:"seed"`
}

// DefaultFitBudget is the paper's architecture with the fit caps used in
// docs/experiments.md.
func DefaultFitBudget(m int) FitBudget {
	return FitBudget{M: m, Hidden: 200, Layers: 3, Blocks: 4, ADMLR: 3e-4, ADMEpochs: 15, ADMSteps: 100, ADMPatience: 10,
		Members: 7, Elites: 5, EnsHidden: []int{200, 200, 200, 200}, EnsEpochs: 15, EnsSteps: 100, EnsPatience: 5}
}

// Models are the fitted dynamics models (nil when not asked for).
type Models struct {
	ADM      *models.ADM
	RNN      *models.ADM // the bootstrapping RNN: the ADM's network, trained one step at a time
	Ensemble *models.Ensemble
}

// modelFiles are the model files inside a models directory; fit.json
// records the budget and data they were fitted with.
var modelFiles = map[string]string{"adm": "adm.ckpt", "rnn": "rnn.ckpt", "ensemble": "ensemble.ckpt"}

const budgetFile = "fit.json"

// prepareModelDir creates dir and, unless its fit.json matches key, removes
// its model files and writes key: every model file present afterwards was
// fitted with this budget on this data.
func prepareModelDir(dir string, key fitKey) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if sameKey(filepath.Join(dir, budgetFile), key) {
		return nil
	}
	for _, f := range modelFiles {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("experiments: %w", err)
		}
	}
	b, _ := json.MarshalIndent(key, "", "  ")
	return atomicfile.WriteFile(filepath.Join(dir, budgetFile), append(b, '\n'), 0o644)
}

func (out *Models) load(w, path string) error {
	var err error
	switch w {
	case "adm":
		out.ADM, _, err = models.LoadADM(path)
	case "rnn":
		out.RNN, _, err = models.LoadADM(path)
	case "ensemble":
		out.Ensemble, _, err = models.LoadEnsemble(path)
	}
	return err
}

func (out *Models) save(w, path string) error {
	switch w {
	case "adm":
		return models.SaveADM(path, out.ADM)
	case "rnn":
		return models.SaveADM(path, out.RNN)
	}
	return models.SaveEnsemble(path, out.Ensemble)
}

// fit trains model w on the replay buffer with the budget's caps.
func (out *Models) fit(w string, replay *buffer.Replay, b FitBudget, log io.Writer) error {
	t0 := time.Now()
	od, ad := replay.ObsDim, replay.ActDim
	if w == "ensemble" {
		rng := rand.New(rand.NewSource(b.Seed*7 + 3))
		e := models.NewEnsemble(od, ad, b.Members, b.EnsHidden, rng)
		fc := dynamics.DefaultEnsembleFitConfig()
		fc.Elites, fc.MaxEpochs, fc.MaxSteps, fc.Patience, fc.MaxHoldout = b.Elites, b.EnsEpochs, b.EnsSteps, b.EnsPatience, 1000
		rep, err := dynamics.FitEnsemble(context.Background(), e, replay, fc, rng)
		if err != nil {
			return fmt.Errorf("experiments: fitting the ensemble: %w", err)
		}
		fmt.Fprintf(log, "ensemble: %d epochs, elites %v, elite holdout MSE %.5f (%.0fs)\n", rep.Epochs, rep.Elites,
			rep.HoldoutLoss, time.Since(t0).Seconds())
		out.Ensemble = e
		return nil
	}
	cfg := models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: b.Hidden, Layers: b.Layers, ResBlocks: b.Blocks, M: b.M}
	seed := b.Seed*7 + 1
	if w == "rnn" {
		seed++
	}
	rng := rand.New(rand.NewSource(seed))
	m, err := models.NewADM(cfg, rng)
	if err != nil {
		return err
	}
	fc := dynamics.DefaultADMFitConfig()
	fc.LR, fc.MaxEpochs, fc.MaxSteps, fc.Patience, fc.Bootstrap = float32(b.ADMLR), b.ADMEpochs, b.ADMSteps, b.ADMPatience, w == "rnn"
	rep, err := dynamics.FitADM(context.Background(), m, replay, fc, rng)
	if err != nil {
		return fmt.Errorf("experiments: fitting the %s: %w", w, err)
	}
	fmt.Fprintf(log, "%s: %d epochs (best %d), holdout MSE %.5f, per k %s (%.0fs)\n", w, rep.Epochs, rep.Best.Epoch,
		rep.HoldoutLoss, fmtF(rep.HoldoutPerK), time.Since(t0).Seconds())
	if w == "adm" {
		out.ADM = m
	} else {
		out.RNN = m
	}
	return nil
}

// FitModels fits the requested models ("adm", "rnn", "ensemble") on the
// training data, or loads them from dir when dir holds them fitted with the
// same budget on the same data; fitted models are saved to dir (when not
// empty). Progress goes to log.
func FitModels(data *datasets.Dataset, b FitBudget, want []string, dir string, log io.Writer) (*Models, error) {
	out := &Models{}
	if dir != "" {
		if err := prepareModelDir(dir, fitKey{Budget: b, Rows: data.N, Sum: sumData(data)}); err != nil {
			return nil, err
		}
	}
	var replay *buffer.Replay
	for _, w := range want {
		file, ok := modelFiles[w]
		if !ok {
			return nil, fmt.Errorf("experiments: unknown model %q (adm, rnn, ensemble)", w)
		}
		path := ""
		if dir != "" {
			path = filepath.Join(dir, file)
			if _, err := os.Stat(path); err == nil {
				if err := out.load(w, path); err != nil {
					return nil, err
				}
				fmt.Fprintf(log, "%s: loaded %s\n", w, path)
				continue
			}
		}
		if replay == nil {
			var err error
			if replay, err = buffer.FromDataset(data, b.Seed+1); err != nil {
				return nil, err
			}
		}
		if err := out.fit(w, replay, b, log); err != nil {
			return nil, err
		}
		if path != "" {
			if err := out.save(w, path); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// fitKey identifies what a models directory was fitted on.
type fitKey struct {
	Budget FitBudget `json:"budget"`
	Rows   int       `json:"rows"`
	Sum    uint64    `json:"data_sum"`
}

func sameKey(path string, k fitKey) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var got fitKey
	if json.Unmarshal(b, &got) != nil {
		return false
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(k)
	return string(g) == string(w)
}

// sumData is a cheap FNV-style checksum of the observations and actions.
func sumData(d *datasets.Dataset) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v []float32) {
		for i := 0; i < len(v); i += 7 {
			h ^= uint64(int64(v[i] * 1e4))
			h *= 1099511628211
		}
	}
	mix(d.Obs)
	mix(d.Act)
	return h
}

func fmtF(v []float64) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.4g", x)
	}
	return s + "]"
}
