package train

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

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
	Real   *Replay
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
	if r.Real, err = loadReplay(f, "real"); err != nil {
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

// Windows samples n histories of up to m real states with the action taken
// at each (the current action included), never crossing an episode end:
// obs and acts hold the rows' l_i states and actions back to back; lens
// holds each l_i.
func (r *Replay) Windows(n, m int, rng *rand.Rand) (obs, acts []float32, lens []int, err error) {
	if r.n == 0 || n <= 0 || m <= 0 {
		return nil, nil, nil, fmt.Errorf("train: replay: %d windows of %d from %d transitions", n, m, r.n)
	}
	od, ad := r.ObsDim, r.ActDim
	for row := 0; row < n; row++ {
		k := rng.Intn(r.n)
		h := r.history(k, m)
		for j := 0; j <= h; j++ {
			i := r.slot(k - h + j)
			obs = append(obs, r.obs[i*od:(i+1)*od]...)
			acts = append(acts, r.act[i*ad:(i+1)*ad]...)
		}
		lens = append(lens, h+1)
	}
	return obs, acts, lens, nil
}
