package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// File names inside a run directory.
const (
	ConfigFile        = "config.json"
	ProgressFile      = "progress.csv"
	ProgressJSONLFile = "progress.jsonl"
	OfflineLogFile    = "offline.csv"
	ModelFitFile      = "model_fit.csv"
	CheckpointFile    = "checkpoint.ckpt"
	PolicyFile        = "policy.onnx"
	ADMFile           = "adm.onnx"
	EnsembleFile      = "ensemble.onnx"
	SnapshotsFile     = "snapshots.json"
	SnapshotsDir      = "snapshots"
)

// Dir is a run directory's path.
type Dir string

// Path returns the path of the named file inside the run directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// Config returns the path of config.json.
func (d Dir) Config() string { return d.Path(ConfigFile) }

// Checkpoint returns the path of checkpoint.ckpt.
func (d Dir) Checkpoint() string { return d.Path(CheckpointFile) }

// Policy returns the path of the final policy.onnx.
func (d Dir) Policy() string { return d.Path(PolicyFile) }

// Progress returns the path of progress.csv.
func (d Dir) Progress() string { return d.Path(ProgressFile) }

// HasRun reports whether the directory already holds a run (its config.json
// exists).
func (d Dir) HasRun() bool {
	_, err := os.Stat(d.Config())
	return err == nil
}

// Finished reports whether the run wrote its final policy.
func (d Dir) Finished() bool {
	_, err := os.Stat(d.Policy())
	return err == nil
}

// Kind is the family of a run: how it was trained.
type Kind string

// Run kinds.
const (
	Online  Kind = "online"  // admpo train online (admpo, mbpo, sac) and behaviour runs
	Offline Kind = "offline" // admpo train offline (admpo, mopo, bc), on a task's data set or one's own
)

// ReadKind reads config.json and tells the run's kind: an offline config
// names its data set ("dataset" key), an online one does not.
func (d Dir) ReadKind() (Kind, error) {
	b, err := os.ReadFile(d.Config())
	if err != nil {
		return "", fmt.Errorf("rundir: %s is not a run directory: %w", d, err)
	}
	return KindOf(b)
}

// KindOf tells the run kind of a config.json's content.
func KindOf(config []byte) (Kind, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(config, &keys); err != nil {
		return "", fmt.Errorf("rundir: %s: %w", ConfigFile, err)
	}
	if _, ok := keys["dataset"]; ok {
		return Offline, nil
	}
	return Online, nil
}
