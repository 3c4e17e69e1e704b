package collect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/rundir"
)

// ShippedDir is the repository directory of the shipped behaviour
// policies: ENV-KIND.onnx actors, ENV-medium-replay.bin.gz replay buffers
// and manifest.json describing them.
const ShippedDir = "datasets/behaviour"

// ManifestName is the shipped policies' manifest in ShippedDir.
const ManifestName = "manifest.json"

// ShippedReplay is a shipped medium policy's training replay buffer up to
// its snapshot (D4RL's medium-replay), in datasets.WriteCompact's format.
type ShippedReplay struct {
	File        string  `json:"file"` // relative to the manifest's directory
	SHA256      string  `json:"sha256"`
	Transitions int     `json:"transitions"`
	Episodes    int     `json:"episodes"`    // complete episodes
	MeanReturn  float64 `json:"mean_return"` // over complete episodes
	Score       float64 `json:"normalised_score"`
}

// ShippedPolicy is one shipped behaviour policy: a snapshot of a behaviour
// SAC run (TrainBehaviour) and how it was made and measured.
type ShippedPolicy struct {
	Env           string          `json:"env"`
	Kind          string          `json:"kind"` // "medium" or "expert"
	File          string          `json:"file"` // ONNX actor, relative to the manifest's directory
	SHA256        string          `json:"sha256"`
	Command       string          `json:"command"` // what trained the behaviour run
	Seed          int64           `json:"seed"`
	Step          int             `json:"env_step"` // of the snapshot
	EvalReturn    float64         `json:"eval_return"`
	EvalReturnStd float64         `json:"eval_return_std"`
	EvalEpisodes  int             `json:"eval_episodes"`
	Score         float64         `json:"normalised_score"` // D4RL normalised EvalReturn
	Source        string          `json:"source"`           // run directory and snapshot file
	RunConfig     json.RawMessage `json:"run_config,omitempty"`
	Replay        *ShippedReplay  `json:"replay,omitempty"` // medium only
}

// Manifest is ShippedDir/manifest.json.
type Manifest struct {
	Policies []ShippedPolicy `json:"policies"`
}

// ReadManifest reads dir/manifest.json; a directory without one holds no
// shipped policies (an empty manifest, no error).
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if os.IsNotExist(err) {
		return &Manifest{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("collect: %s/%s: %w", dir, ManifestName, err)
	}
	return &m, nil
}

// Find returns the shipped policy for env and kind.
func (m *Manifest) Find(env, kind string) (ShippedPolicy, bool) {
	for _, p := range m.Policies {
		if p.Env == env && p.Kind == kind {
			return p, true
		}
	}
	return ShippedPolicy{}, false
}

// put adds p, replacing the entry of the same env and kind, sorted.
func (m *Manifest) put(p ShippedPolicy) {
	out := []ShippedPolicy{p}
	for _, q := range m.Policies {
		if q.Env != p.Env || q.Kind != p.Kind {
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Kind < out[j].Kind
	})
	m.Policies = out
}

// Checksum is the hex SHA-256 of b, as the manifest records it.
func Checksum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readChecked reads dir/file and checks its SHA-256.
func readChecked(dir, file, sum string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("collect: shipped file: %w", err)
	}
	if got := Checksum(b); got != sum {
		return nil, fmt.Errorf("collect: %s: SHA-256 %s, the manifest says %s (the file was changed)", filepath.Join(dir, file), got, sum)
	}
	return b, nil
}

// Actor returns the policy's ONNX actor from dir, checksum verified.
func (p ShippedPolicy) Actor(dir string) ([]byte, error) { return readChecked(dir, p.File, p.SHA256) }

// ReplayData returns a shipped medium policy's replay buffer from dir,
// checksum verified.
func (p ShippedPolicy) ReplayData(dir string) (*datasets.Dataset, error) {
	if p.Replay == nil {
		return nil, fmt.Errorf("collect: the shipped %s-%s policy has no replay buffer (only medium policies ship one)", p.Env, p.Kind)
	}
	b, err := readChecked(dir, p.Replay.File, p.Replay.SHA256)
	if err != nil {
		return nil, err
	}
	d, err := datasets.ReadCompact(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("collect: %s: %w", p.Replay.File, err)
	}
	return d, nil
}

// PromoteOptions chooses the snapshot to ship and how it is measured.
type PromoteOptions struct {
	Kind         string // "medium" or "expert"
	Step         int    // snapshot env step (0: expert = best, medium = closest to MediumReturn)
	MediumReturn float64
	EvalEpisodes int
	Seed         int64  // of the evaluation episodes
	Command      string // what trained the run, recorded in the manifest
}

// Promote copies a snapshot of the behaviour run in run to dir as
// ENV-KIND.onnx, measures its deterministic return over EvalEpisodes
// episodes, and records it in dir/manifest.json (replacing an earlier
// entry of the same env and kind). A medium policy also ships the run's
// replay buffer up to the snapshot (D4RL's medium-replay) as
// ENV-medium-replay.bin.gz.
func Promote(run, dir string, opt PromoteOptions) (ShippedPolicy, error) {
	var p ShippedPolicy
	if opt.Kind != "medium" && opt.Kind != "expert" {
		return p, fmt.Errorf("collect: promote: kind %q is not medium or expert", opt.Kind)
	}
	if opt.EvalEpisodes <= 0 {
		return p, fmt.Errorf("collect: promote: %d evaluation episodes", opt.EvalEpisodes)
	}
	l, err := ReadBehaviourLog(run)
	if err != nil {
		return p, err
	}
	snap, err := l.pick(opt.Kind, opt.Step, opt.MediumReturn)
	if err != nil {
		return p, err
	}
	actor, err := os.ReadFile(filepath.Join(run, snap.File))
	if err != nil {
		return p, fmt.Errorf("collect: promote: %w", err)
	}
	pol, err := OpenONNXPolicy(actor, infer.Options{Threads: 1}, true)
	if err != nil {
		return p, err
	}
	ret, std, err := EvalPolicy(Builtin(l.Env), pol, opt.EvalEpisodes, opt.Seed)
	pol.Close()
	if err != nil {
		return p, err
	}
	p = ShippedPolicy{Env: l.Env, Kind: opt.Kind, File: l.Env + "-" + opt.Kind + ".onnx", SHA256: Checksum(actor),
		Command: opt.Command, Seed: l.Seed, Step: snap.Step, EvalReturn: ret, EvalReturnStd: std,
		EvalEpisodes: opt.EvalEpisodes, Score: normalisedOrNaN(l.Env, ret), Source: filepath.Join(run, snap.File)}
	if b, err := os.ReadFile(rundir.Dir(run).Config()); err == nil && json.Valid(b) {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			p.RunConfig = c.Bytes()
		}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return p, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return p, fmt.Errorf("collect: %w", err)
	}
	if opt.Kind == "medium" {
		if p.Replay, err = shipReplay(run, dir, l.Env, snap.Step); err != nil {
			return p, err
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, p.File), actor, 0o644); err != nil {
		return p, err
	}
	m.put(p)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return p, err
	}
	return p, atomicfile.WriteFile(filepath.Join(dir, ManifestName), append(b, '\n'), 0o644)
}

// pick chooses the snapshot at step, or by kind: expert = best, medium =
// closest to mediumReturn (a third of the best when 0).
func (l *BehaviourLog) pick(kind string, step int, mediumReturn float64) (Snapshot, error) {
	if step > 0 {
		for _, s := range l.Snapshots {
			if s.Step == step {
				return s, nil
			}
		}
		return Snapshot{}, fmt.Errorf("collect: the behaviour run has no snapshot at env step %d", step)
	}
	best, err := l.Best()
	if err != nil || kind == "expert" {
		return best, err
	}
	if mediumReturn <= 0 {
		mediumReturn = best.EvalReturn / 3
	}
	return l.Medium(mediumReturn)
}

// shipReplay writes the run's replay buffer up to env step as
// ENV-medium-replay.bin.gz in dir.
func shipReplay(run, dir, env string, step int) (*ShippedReplay, error) {
	f, err := ckpt.Load(rundir.Dir(run).Checkpoint())
	if err != nil {
		return nil, err
	}
	real, err := buffer.Load(f, "real")
	if err != nil {
		return nil, err
	}
	if real.Len() < step {
		return nil, fmt.Errorf("collect: %s's replay buffer holds %d transitions, fewer than the snapshot's env step %d", run, real.Len(), step)
	}
	d, err := real.Dataset(step)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := datasets.WriteCompact(&buf, d); err != nil {
		return nil, err
	}
	r := &ShippedReplay{File: env + "-medium-replay.bin.gz", SHA256: Checksum(buf.Bytes()), Transitions: d.N}
	r.Episodes, r.MeanReturn = d.EpisodeReturns()
	r.Score = normalisedOrNaN(env, r.MeanReturn)
	return r, atomicfile.WriteFile(filepath.Join(dir, r.File), buf.Bytes(), 0o644)
}

// normalisedOrNaN is the D4RL normalised score, 0 for tasks without
// reference scores (JSON has no NaN).
func normalisedOrNaN(env string, ret float64) float64 {
	s, err := datasets.NormalizedScore(env, ret)
	if err != nil {
		return 0
	}
	return s
}
