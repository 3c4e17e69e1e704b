package dynamics

import "github.com/admpo/admpo/device"

// Config sizes a run's dynamics model and sets how it is fitted. The online
// and offline run configs convert their own config.json keys into it.
type Config struct {
	Task string // the task named in the exported ONNX files' metadata
	Seed int64  // weight initialisation

	M            int // ADM maximum backtracking length
	ADMHidden    int // ADM GRU width
	ADMLayers    int // ADM GRU layers
	ADMResBlocks int // ADM head ResBlocks
	Ensemble     int // ensemble members
	Elites       int // ensemble elites

	// LR is the ADM's learning rate (0: DefaultADMFitConfig's).
	LR float64
	// EnsembleLR is the ensemble's learning rate (0:
	// DefaultEnsembleFitConfig's, MBPO's 1e-3).
	EnsembleLR float64
	// WarmStart keeps training the ADM across fits instead of
	// re-initialising it.
	WarmStart   bool
	MaxEpochs   int // cap on epochs per fit (0: until early stop)
	Patience    int // epochs without holdout improvement before stopping
	EpochSteps  int // cap on Adam steps per epoch (0: full passes)
	EpochPasses int // ADM passes over its train starts per epoch
	// Improve is the ADM's early-stopping test: "scaled" or "authors"
	// (ADMFitConfig.AuthorsImprove).
	Improve string
	// OneK trains one drawn k per ADM Adam step (ADMFitConfig.OneK); the
	// ensemble ignores it.
	OneK       bool
	MaxHoldout int    // cap on holdout starts (0: the fit's default)
	Engine     string // ADM roll-out engine: "direct" or "incremental"
	// RolloutDropout keeps the ADM's dropout on in roll-outs and in the
	// fit's holdout validation.
	RolloutDropout bool
	// OnEpoch, when set, is called after every fit epoch with its point of
	// the learning curve (progress for long fits).
	OnEpoch func(FitEpoch)
	// Device, when set, runs the ADM's or the ensemble's train steps there
	// (ADMFitConfig.Device, EnsembleFitConfig.Device). DeviceGraph records
	// the step as a device graph (ADMFitConfig.DeviceGraph,
	// EnsembleFitConfig.DeviceGraph).
	Device      device.Device
	DeviceGraph bool
	// RollDevice, when set ("emu" or "cuda", RollDevices), rolls the ADM
	// out on RollOn (device/rolldev) instead of ONNX Runtime ("": ONNX
	// Runtime); the ensemble rolls out on ONNX Runtime only. RollOn is that
	// device, open; its owner closes it after the model (ADM.Close).
	RollDevice string
	RollOn     device.Device
}
