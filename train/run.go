package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/rundir"
)

// Run kinds (policies.Manifest.RunKind in an exported bundle).
const (
	KindOnline  = policies.RunOnline  // admpo, mbpo or sac trained in a simulator
	KindOffline = policies.RunOffline // admpo, mopo or bc trained on a task's data set
	KindOwnData = policies.RunOwnData // an offline run on data without a task
)

// Run is a finished run directory of any kind, read once by OpenRunDir:
// its kind, its config.json (in the config struct of its kind), its final
// ONNX files and its last checkpoint.
type Run struct {
	Dir     string
	Kind    string         // KindOnline, KindOffline or KindOwnData
	Algo    string         // admpo, mbpo, sac, mopo or bc
	Online  *OnlineConfig  // an online run's config; nil for offline runs
	Offline *OfflineConfig // an offline run's config; nil for online runs
	Policy  []byte         // policy.onnx, the final policy
	ADM     []byte         // adm.onnx (admpo runs); nil when absent
	// Step is the last checkpoint's env step (online) or policy update
	// (offline).
	Step int

	ckpt *ckpt.File
	// dataN and dataSum are an offline run's data set (transitions,
	// checksum) as its checkpoint records it; 0 when not recorded.
	dataN   int
	dataSum uint32
}

// OpenRunDir reads the finished run in dir: config.json (its kind and
// config), policy.onnx, adm.onnx when there is one, and the checkpoint.
func OpenRunDir(dir string) (*Run, error) {
	d := rundir.Dir(dir)
	cj, err := os.ReadFile(d.Config())
	if err != nil {
		return nil, fmt.Errorf("train: %s is not a run directory: %w", dir, err)
	}
	kind, err := rundir.KindOf(cj)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", dir, err)
	}
	r := &Run{Dir: dir, Kind: KindOnline}
	if kind == rundir.Offline {
		r.Offline = new(OfflineConfig)
		err = json.Unmarshal(cj, r.Offline)
		r.Kind, r.Algo = KindOffline, r.Offline.Algo
		if r.Offline.Env == "" {
			r.Kind = KindOwnData
		}
	} else {
		r.Online = new(OnlineConfig)
		err = json.Unmarshal(cj, r.Online)
		r.Algo = r.Online.Algo
	}
	if err != nil {
		return nil, fmt.Errorf("train: %s/%s: %w", dir, rundir.ConfigFile, err)
	}
	if r.Policy, err = os.ReadFile(d.Policy()); err != nil {
		return nil, fmt.Errorf("train: %s has no final policy (did the run finish?): %w", dir, err)
	}
	if r.ADM, err = os.ReadFile(d.Path(rundir.ADMFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("train: %s: %w", dir, err)
	}
	if r.ckpt, err = ckpt.Load(d.Checkpoint()); err != nil {
		return nil, err
	}
	var st struct {
		Step    int
		DataN   int
		DataSum uint32
	}
	if err := readState(r.ckpt, &st); err != nil {
		return nil, fmt.Errorf("train: %s checkpoint: %w", dir, err)
	}
	r.Step, r.dataN, r.dataSum = st.Step, st.DataN, st.DataSum
	return r, nil
}

// Checkpoint is the run's last checkpoint.
func (r *Run) Checkpoint() *ckpt.File { return r.ckpt }

// Real returns an online run's real replay buffer from its checkpoint.
// Offline runs have none: their data are their data set (Offline.Dataset).
func (r *Run) Real() (*buffer.Replay, error) {
	if r.Online == nil {
		return nil, fmt.Errorf("train: %s is an offline run: it has no real replay buffer of its own (its data are its data set)", r.Dir)
	}
	return buffer.Load(r.ckpt, "real")
}

// RealData names where the run's real data are: "real replay" (online) or
// the data set's path (offline).
func (r *Run) RealData() string {
	if r.Offline != nil {
		return r.Offline.Dataset
	}
	return "real replay"
}
