package dynamics

import (
	"context"
	"math/rand"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ckpt"
)

// FitReport summarises one dynamics-model fit.
type FitReport struct {
	Epochs       int
	TrainLoss    float64   // final training loss (Gaussian NLL)
	HoldoutLoss  float64   // best holdout loss
	HoldoutPerK  []float64 // holdout MSE of the mean for k = 1..m (one value for one-step models)
	HoldoutCount int
	// Curve is the fit's learning curve, one entry per epoch.
	Curve []FitEpoch
}

// FitEpoch is one epoch of a fit: how far it had trained and how well the
// model then predicted its holdout data.
type FitEpoch struct {
	Epoch     int
	AdamSteps int     // Adam steps of the fit so far
	TrainLoss float64 // mean train-batch Gaussian NLL over the epoch (ensemble: mean over members)
	// HoldoutLoss is the holdout MSE after the epoch, the measure of
	// FitReport.HoldoutLoss (ADM: over valid (start, k) pairs; ensemble: the
	// mean of the epoch's best Elites members).
	HoldoutLoss float64
	HoldoutPerK []float64 // ADM: the holdout MSE for k = 1..m; ensemble: nil
	// StopMetric is what early stopping compares (ADM: the variance-scaled
	// holdout MSE; ensemble: HoldoutLoss).
	StopMetric float64
	Seconds    float64 // wall time since the fit started
}

// Model is a learned dynamics model that the model-based loops fit, export
// to ONNX and roll out through the infer engine.
type Model interface {
	// M is the history length the roll-out starts need (1 for one-step models).
	M() int
	// Fit re-fits the model on the real data, in at most maxSteps Adam
	// steps (0: no cap); a cancelled ctx stops it early with ctx's error
	// (the model is then left part-trained).
	Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (FitReport, error)
	// Roller exports the current weights and opens a roll-out engine.
	Roller(opts infer.Options) (infer.Roller, error)
	// ExportONNX is the model's ONNX file for the run directory.
	ExportONNX() ([]byte, error)
	// Save and Load put the weights into and take them from a checkpoint.
	Save(f *ckpt.File) error
	Load(f *ckpt.File) error
}
