package trainfix

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/train"
)

// RandomHopper collects n transitions of the uniform random policy in
// hopper from seed.
func RandomHopper(t testing.TB, n int, seed int64) *datasets.Dataset {
	t.Helper()
	d, _, err := collect.Dataset(collect.Builtin("hopper"), n, seed, collect.Options{}, collect.SharedActor(envs.UniformActor{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WriteD4RL writes d as a D4RL file at path.
func WriteD4RL(t testing.TB, path string, d *datasets.Dataset) {
	t.Helper()
	if err := datasets.WriteD4RL(path, d); err != nil {
		t.Fatal(err)
	}
}

// RandomHopperFile writes RandomHopper(t, n, 3) as a D4RL file
// hopper-random.hdf5 in a new temporary directory and returns its path.
func RandomHopperFile(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hopper-random.hdf5")
	WriteD4RL(t, path, RandomHopper(t, n, 3))
	return path
}

// TinyOfflineConfig is a hopper offline run of algo on dataset (of kind)
// small enough for a unit test: 3 epochs of 100 updates.
func TinyOfflineConfig(t testing.TB, algo, kind, dataset string) train.OfflineConfig {
	t.Helper()
	c, err := train.OfflinePreset("quick", "hopper", kind, algo, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Dataset = dataset
	c.Epochs, c.StepsPerEpoch, c.CheckpointEvery, c.EvalEpisodes = 3, 100, 100, 1
	c.Batch, c.Hidden = 32, []int{32, 32}
	c.RolloutEvery, c.RolloutBatch, c.Horizon, c.ModelRetain = 50, 64, 2, 2
	c.M, c.ADMHidden, c.ADMLayers, c.ADMResBlocks = 2, 16, 1, 1
	c.Ensemble, c.Elites, c.ModelMaxEpochs, c.ModelPatience = 3, 2, 2, 2
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// RunOfflineToEnd trains a fresh offline run of cfg in dir to its end.
func RunOfflineToEnd(t testing.TB, cfg train.OfflineConfig, dir string) {
	t.Helper()
	o, err := train.NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TinyOnlineConfig is a hopper online run of algo small enough for a unit
// test: 200 uniform random warm-up steps, then 60 learning steps with one
// model round (fit and roll-out of length 3) at the warm-up's end.
func TinyOnlineConfig(t testing.TB, algo string) train.OnlineConfig {
	t.Helper()
	c, err := train.Preset("quick", "hopper", algo, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Steps, c.WarmUp, c.UpdatesPerStep, c.Batch, c.Hidden = 60, 200, 1, 32, []int{32, 32}
	c.EvalEvery, c.EvalEpisodes, c.CheckpointEvery = 260, 1, 260
	c.ModelEvery, c.RolloutBatch, c.Rollout = 100, 64, train.Schedule{From: 3, To: 3}
	c.ADMHidden, c.ADMLayers, c.ADMResBlocks, c.M = 16, 1, 1, 3
	c.Ensemble, c.Elites, c.ModelMaxEpochs, c.ModelPatience = 3, 2, 3, 2
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// RunOnlineTo trains a fresh online run of cfg in dir to env step stop
// (its end when stop is cfg.TotalSteps(): then its final files are
// written too) and leaves a checkpoint at stop.
func RunOnlineTo(t testing.TB, cfg train.OnlineConfig, dir string, stop int) {
	t.Helper()
	o, err := train.NewOnline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if stop == cfg.TotalSteps() {
		err = o.Run(context.Background())
	} else if err = o.RunTo(context.Background(), stop); err == nil {
		err = o.Checkpoint()
	}
	if err != nil {
		t.Fatal(err)
	}
}
