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
