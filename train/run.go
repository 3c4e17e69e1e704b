package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/rundir"
)

// RunInfo is what a finished (or checkpointed) run directory offers for
// export: its config, its final ONNX files and its real data.
type RunInfo struct {
	Dir    string
	Config OnlineConfig
	Policy []byte // policy.onnx
	Model  []byte // adm.onnx or ensemble.onnx; nil when absent
	Real   *buffer.Replay
	Step   int
}

// OpenRun reads an online run directory: config.json, policy.onnx, the
// model file and the real replay buffer from the checkpoint. Offline runs
// are refused (ExportBundle reads every kind).
func OpenRun(dir string) (*RunInfo, error) {
	r := &RunInfo{Dir: dir}
	b, err := os.ReadFile(rundir.Dir(dir).Config())
	if err != nil {
		return nil, fmt.Errorf("train: %s is not a run directory: %w", dir, err)
	}
	kind, err := rundir.KindOf(b)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", dir, err)
	}
	if kind == rundir.Offline {
		return nil, fmt.Errorf("train: %s is an offline run: it has no real replay buffer of its own (its data are its data set)", dir)
	}
	if err := json.Unmarshal(b, &r.Config); err != nil {
		return nil, fmt.Errorf("train: %s/config.json: %w", dir, err)
	}
	if r.Policy, err = os.ReadFile(rundir.Dir(dir).Policy()); err != nil {
		return nil, fmt.Errorf("train: %s has no final policy (did the run finish?): %w", dir, err)
	}
	for _, name := range []string{rundir.ADMFile, rundir.EnsembleFile} {
		if m, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			r.Model = m
		}
	}
	f, err := ckpt.Load(rundir.Dir(dir).Checkpoint())
	if err != nil {
		return nil, err
	}
	if r.Real, err = buffer.Load(f, "real"); err != nil {
		return nil, err
	}
	sb, err := f.Bytes("state")
	if err != nil {
		return nil, err
	}
	var st onlineState
	if err := json.Unmarshal(sb, &st); err != nil {
		return nil, fmt.Errorf("train: %s checkpoint state: %w", dir, err)
	}
	r.Step = st.Step
	return r, nil
}
