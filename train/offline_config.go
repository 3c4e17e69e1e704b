package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/sac"
)

// OfflineConfig is everything an offline run (ADMPO-OFF, MOPO or BC) needs.
// It is saved as the run directory's config.json; "algo", "env" and "seed"
// are the keys `admpo plot` groups by.
type OfflineConfig struct {
	Env string `json:"env"` // the task evaluations play (empty: data that name no task, no evaluation)
	// EnvFile is the absolute path of the task file whose task Env is
	// (--env-file), EnvDigest the SHA-256 of the file and its MJCF model
	// (envs.Task.Digest): a resume, export or diagnosis refuses a file
	// that changed since. Empty for a built-in task.
	EnvFile   string `json:"env_file,omitempty"`
	EnvDigest string `json:"env_file_sha256,omitempty"`
	// Remote is the remote environment evaluations play when Env is its
	// address (--eval-env tcp://HOST:PORT): its spec as the server
	// announced it, which a resume requires again, and the answer timeout.
	Remote  *RemoteEnv `json:"remote,omitempty"`
	Algo    string     `json:"algo"` // "admpo", "mopo" or "bc"
	Preset  string     `json:"preset"`
	Dataset string     `json:"dataset"`      // path of the D4RL HDF5 file
	Name    string     `json:"dataset_name"` // e.g. "hopper-medium-replay": the preset's key
	Kind    string     `json:"dataset_kind"` // random, medium, expert, medium-replay, medium-expert
	Seed    int64      `json:"seed"`
	// Version is the config format (ConfigVersion; 1 when the key is
	// absent): see ConfigVersion and docs/fidelity.md.
	Version int `json:"config_version"`

	Epochs        int     `json:"epochs"`
	StepsPerEpoch int     `json:"steps_per_epoch"` // policy updates per epoch (one per step)
	Batch         int     `json:"batch"`
	RealRatio     float64 `json:"real_ratio"` // share of dataset transitions in a SAC batch
	Hidden        []int   `json:"hidden"`
	Gamma         float64 `json:"gamma"`
	ActorLR       float64 `json:"actor_lr"` // decayed by ActorLRSchedule (SAC); constant for BC
	// ActorLRSchedule is the actor learning rate's schedule: "cosine-epoch"
	// (the authors': a cosine to 0 over the run, stepped once per epoch),
	// "cosine" (a cosine to 0 over the run's updates, stepped every update;
	// when the key is absent) or "constant".
	ActorLRSchedule string  `json:"actor_lr_schedule"`
	CriticLR        float64 `json:"critic_lr"`
	AlphaLR         float64 `json:"alpha_lr"`
	AutoAlpha       bool    `json:"auto_alpha"`
	// Alpha is the initial (AutoAlpha) or fixed entropy coefficient,
	// under the online config's key; config.json files written before
	// 2026-11-27 call it init_alpha, which still loads (LegacyKeys).
	Alpha         float64 `json:"alpha"`
	TargetEntropy float64 `json:"target_entropy"`

	RolloutEvery int     `json:"rollout_every"` // policy updates between roll-outs
	RolloutBatch int     `json:"rollout_batch"` // start sequences per roll-out
	Horizon      int     `json:"horizon"`       // H: model steps per roll-out
	Penalty      float64 `json:"penalty"`       // beta: r - beta*U (U^ADM or MOPO's max-std)
	ModelRetain  int     `json:"model_retain"`  // roll-outs the model buffer keeps

	ModelSettings
	RuntimeSettings

	// The data's sizes and termination, for every run (what `admpo export`
	// reads); configs written before these keys take the task's sizes and
	// its termination rule.
	ObsDim      int               `json:"obs_dim"`
	ActDim      int               `json:"act_dim"`
	Termination string            `json:"termination"` // "task" (the task's rule), "none" or "learned"
	TermModel   *TerminationModel `json:"termination_model,omitempty"`
	ActionLow   []float64         `json:"action_low,omitempty"` // without a task: the data's action range
	ActionHigh  []float64         `json:"action_high,omitempty"`
}

// legacyOffline is the meaning of the keys a version 1 config.json lacks.
var legacyOffline = OfflineConfig{Version: 1, ActorLRSchedule: "cosine", ModelSettings: legacyModel}

// UnmarshalJSON reads a config.json; keys it lacks keep the values that
// reproduce the run as the code that wrote it ran it (legacyOffline), and
// old key names (LegacyKeys) are read as their new ones.
func (c *OfflineConfig) UnmarshalJSON(b []byte) error {
	type plain OfflineConfig
	p := plain(legacyOffline)
	b, err := renameLegacyKeys(b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = OfflineConfig(p)
	return nil
}

// FullHistoryStarts tells whether roll-outs start only from states with a
// full history (the authors' rule; version 2).
func (c OfflineConfig) FullHistoryStarts() bool { return c.Version >= 2 }

// sacConfig maps the policy settings onto SAC's for a task's action bounds.
func (c OfflineConfig) sacConfig(low, high []float64) sac.Config {
	sc := sac.DefaultConfig(len(low))
	sc.Hidden, sc.BatchSize, sc.Gamma, sc.Seed = c.Hidden, c.Batch, c.Gamma, c.Seed
	sc.ActorLR, sc.CriticLR, sc.AlphaLR = c.ActorLR, c.CriticLR, c.AlphaLR
	sc.AutoAlpha, sc.InitAlpha = c.AutoAlpha, c.Alpha
	sc.TargetEntropy = sacTargetEntropy(c.Version, c.TargetEntropy, low, high)
	switch {
	case c.Algo == "bc":
		sc.CriticLR, sc.AlphaLR, sc.InitAlpha = 1, 1, 1
	case c.ActorLRSchedule == "cosine":
		sc.ActorLRDecayUpdates = c.TotalSteps()
	case c.ActorLRSchedule == "cosine-epoch":
		// PyTorch's CosineAnnealingLR(T_max = epochs) stepped after every
		// epoch: the rate of epoch e is the cosine at e/epochs.
		sc.ActorLRDecayUpdates, sc.ActorLRDecayEvery = c.TotalSteps(), c.StepsPerEpoch
	}
	return sc
}

// OfflineAlgos lists the offline algorithms.
var OfflineAlgos = []string{"admpo", "mopo", "bc"}

// DatasetKinds lists the D4RL data set kinds the presets know.
var DatasetKinds = []string{"random", "medium", "expert", "medium-replay", "medium-expert"}

// offlineHyper is one data set's ADMPO-OFF settings: m, H, beta and the
// authors' fixed entropy coefficient alpha.
type offlineHyper struct {
	m, h  int
	beta  float64
	alpha float64
}

// paperOffline is the paper's Table admpo_off_hyper (D4RL MuJoCo) with the
// authors' fixed alpha of each data set (config/d4rl/*.yml: auto_alpha
// False; alpha 0.1 where the file sets none). Where the table and the
// authors' code disagree the code wins: halfcheetah-medium-expert runs H 20
// and beta 9.16 there (the table: 50 and 10). The paper lists no expert
// data sets; they use the medium values.
var paperOffline = map[string]offlineHyper{
	"hopper-random":             {5, 50, 5, 1},
	"halfcheetah-random":        {2, 10, 2.5, 0.1},
	"walker2d-random":           {2, 50, 2.5, 1},
	"hopper-medium":             {5, 10, 1, 0.05},
	"halfcheetah-medium":        {2, 5, 2.5, 0.1},
	"walker2d-medium":           {5, 10, 5, 0.01},
	"hopper-medium-replay":      {5, 5, 0.1, 0.05},
	"halfcheetah-medium-replay": {2, 5, 2.5, 0.1},
	"walker2d-medium-replay":    {5, 5, 0.1, 0.1},
	"hopper-medium-expert":      {2, 20, 20, 0.05},
	"halfcheetah-medium-expert": {2, 20, 9.16, 0.05},
	"walker2d-medium-expert":    {3, 2, 6, 0.011},
}

// mopoOffline is MOPO's per-data-set roll-out length and penalty
// coefficient from the MOPO authors' D4RL configs (examples/config/d4rl/*.py
// in tianheyu927/mopo, D4RL v0; "mixed" is medium-replay). Data sets not
// listed use H = 5 and beta = 2.5.
var mopoOffline = map[string]struct {
	h    int
	beta float64
}{
	"hopper-random":             {5, 1},
	"hopper-medium":             {5, 5},
	"hopper-medium-replay":      {5, 1},
	"hopper-medium-expert":      {5, 1},
	"walker2d-random":           {1, 1},
	"walker2d-medium":           {5, 5},
	"walker2d-medium-replay":    {1, 1},
	"walker2d-medium-expert":    {1, 2},
	"halfcheetah-random":        {5, 0.5},
	"halfcheetah-medium":        {1, 1},
	"halfcheetah-medium-replay": {5, 1},
	"halfcheetah-medium-expert": {5, 5},
}

// customOffline is ADMPO-OFF's (m, H, beta, alpha) for data without a task
// (bring your own data): MOPO's H and beta for data sets it does not list,
// the paper's smallest m and the authors' default fixed alpha 0.1.
var customOffline = offlineHyper{2, 5, 2.5, 0.1}

var versionSuffix = regexp.MustCompile(`-v[0-9]+$`)

// ErrUnknownDataset marks a data set whose metadata and file name name no
// task or kind.
var ErrUnknownDataset = errors.New("unknown data set")

// DatasetIdentity tells a data set's task and kind: from its metadata
// (env, kind; meta may be nil), else from its file name such as
// "hopper-medium-replay-v2.hdf5" or "runs/walker2d-random.hdf5" (ENV-KIND).
// When neither gives both it returns what it found and an error wrapping
// ErrUnknownDataset.
func DatasetIdentity(path string, meta map[string]string) (env, kind string, err error) {
	env, kind = meta["env"], meta["kind"]
	if env != "" && kind != "" {
		return env, kind, nil
	}
	base := strings.ToLower(filepath.Base(path))
	for _, ext := range []string{".hdf5", ".h5"} {
		base = strings.TrimSuffix(base, ext)
	}
	base = versionSuffix.ReplaceAllString(base, "")
	base = strings.ReplaceAll(base, "_", "-")
	for _, k := range []string{"medium-replay", "medium-expert", "random", "medium", "expert"} {
		if strings.HasSuffix(base, "-"+k) {
			if env == "" {
				env = strings.TrimSuffix(base, "-"+k)
			}
			if kind == "" {
				kind = k
			}
			return env, kind, nil
		}
	}
	return env, kind, fmt.Errorf("%w: the metadata names no env/kind and the file name %q does not end in a kind (want ENV-KIND, KIND one of %s)",
		ErrUnknownDataset, path, strings.Join(DatasetKinds, ", "))
}

// OfflinePreset returns the named preset for a task, data set kind and
// algorithm: "paper" (ADMPO-OFF as the authors' code runs it: the paper's
// m, H and beta, a fixed alpha per data set, 5000 epochs of 1000 updates
// (3000 on random data) with the actor's cosine stepped per epoch; MOPO's
// own per-data-set H and beta over 1000 epochs), "cpu" (the paper's
// algorithms, models and per-data-set settings on a D4RL-sized data set in
// about two hours of one CPU core: 200 epochs for every algorithm, 10000
// roll-out starts and a model fit of at most 30000 Adam steps) or "quick"
// (the same loop sized for two CPU cores: smaller networks for the model,
// 5000 roll-out starts, 20 epochs).
func OfflinePreset(name, env, kind, algo string, actDim int) (OfflineConfig, error) {
	key := env + "-" + kind
	hk := key
	if kind == "expert" {
		hk = env + "-medium"
	}
	c := OfflineConfig{Env: env, Algo: algo, Preset: name, Name: key, Kind: kind, Version: ConfigVersion,
		Epochs: 1000, StepsPerEpoch: 1000, Batch: 256, RealRatio: 0.05, Hidden: []int{256, 256}, Gamma: 0.99,
		ActorLR: 1e-4, ActorLRSchedule: "cosine", CriticLR: 3e-4, AlphaLR: 1e-4, AutoAlpha: true, Alpha: 0.2,
		TargetEntropy: -float64(actDim), RolloutEvery: 1000, RolloutBatch: 50000, ModelRetain: 5,
		ModelSettings: ModelSettings{ADMHidden: 200, ADMLayers: 3, ADMResBlocks: 4, Ensemble: 7, Elites: 5,
			ModelLR: 3e-4, ModelPatience: 25, ModelEpochPasses: 1, ModelImprove: "scaled", ModelMaxHold: 1000, Engine: "incremental"},
		RuntimeSettings: RuntimeSettings{EvalEpisodes: 10, CheckpointEvery: 5000, Provider: "cpu", Device: "cpu", BLASThreads: 1}}
	if kind == "medium-replay" || kind == "medium-expert" {
		c.RealRatio = 0.5
	}
	if algo == "mopo" {
		c.EnsembleLR = 1e-3 // MBPO's and MOPO's
	}
	switch algo {
	case "admpo":
		p, ok := paperOffline[hk]
		if !ok && env == "" {
			p, ok = customOffline, true
		}
		if !ok {
			return OfflineConfig{}, fmt.Errorf("train: the paper lists no ADMPO-OFF settings for %q: set --m, --horizon and --penalty", key)
		}
		c.M, c.Horizon, c.Penalty = p.m, p.h, p.beta
		if env == "ant" || env == "humanoid" || key == "halfcheetah-medium-expert" {
			c.ADMHidden = 400
		}
		// The authors' D4RL runs: fixed alpha, 5000 epochs (3000 on random
		// data) with the actor's cosine stepped once per epoch, and an ADM
		// epoch of m passes (their epoch: train/256·m steps of one k each).
		c.AutoAlpha, c.Alpha, c.ModelEpochPasses = false, p.alpha, p.m
		c.Epochs, c.ActorLRSchedule = 5000, "cosine-epoch"
		// The authors' ADM is never put in eval mode: dropout stays on.
		c.RolloutDropout = true
		if kind == "random" {
			c.Epochs = 3000
		}
		if key == "halfcheetah-medium-replay" {
			// config/d4rl/halfcheetah-medium-replay.yml: the default real
			// ratio 0.05, actor lr 7e-5 without the cosine.
			c.RealRatio, c.ActorLR, c.ActorLRSchedule = 0.05, 7e-5, "constant"
		}
	case "mopo":
		c.M, c.Horizon, c.Penalty = 1, 5, 2.5
		if p, ok := mopoOffline[hk]; ok {
			c.Horizon, c.Penalty = p.h, p.beta
		}
		c.ModelPatience = 5
	case "bc":
		c.RealRatio = 1
	default:
		return OfflineConfig{}, fmt.Errorf("train: unknown offline algo %q (%s)", algo, strings.Join(OfflineAlgos, ", "))
	}
	switch name {
	case "paper":
	case "cpu":
		// The paper preset's algorithms on one CPU core in about two hours
		// (docs/results-offline.md, "The cpu preset", has each change's
		// measured cost): 200 epochs of 1000 updates for every algorithm
		// (paper: 5000 ADMPO-OFF, 1000 MOPO), the actor's cosine over those
		// epochs; 10000 roll-out starts every epoch (paper 50000; the model
		// buffer then holds 5 x 10000 x H); the model fitted in epochs of
		// 1000 Adam steps, each followed by the holdout check, at most 30
		// (paper: full passes until early stop, hours on 1M transitions).
		// Everything else is the paper's.
		c.Epochs, c.RolloutBatch = 200, 10000
		c.ModelEpochSteps, c.ModelMaxEpochs = 1000, 30
	case "quick":
		// Alpha tuned from 0.2, the actor's cosine over the 20 epochs'
		// updates and one ADM pass per epoch, as the quick preset was tuned.
		c.Epochs, c.RolloutBatch, c.EvalEpisodes = 20, 5000, 5
		c.ADMHidden, c.ADMLayers, c.ADMResBlocks = 64, 2, 2
		c.ModelMaxEpochs, c.ModelPatience, c.ModelEpochPasses = 30, 5, 1
		c.AutoAlpha, c.Alpha, c.RolloutDropout = true, 0.2, false
		if c.ActorLRSchedule == "cosine-epoch" {
			c.ActorLRSchedule = "cosine"
		}
	default:
		return OfflineConfig{}, unknownPreset(name)
	}
	return c, c.Validate()
}

// Validate checks the configuration's values and their consistency.
func (c OfflineConfig) Validate() error {
	var p problems
	p.algoVersion(c.Algo, OfflineAlgos, c.Version)
	p.check(c.ActorLRSchedule == "cosine" || c.ActorLRSchedule == "cosine-epoch" || c.ActorLRSchedule == "constant",
		"actor lr schedule %q must be cosine, cosine-epoch or constant", c.ActorLRSchedule)
	p.check(c.Epochs > 0 && c.StepsPerEpoch > 0, "epochs %d and steps per epoch %d must be positive", c.Epochs, c.StepsPerEpoch)
	p.check(c.Batch > 0, "batch %d must be positive", c.Batch)
	p.check(c.RealRatio >= 0 && c.RealRatio <= 1, "real ratio %v must be in [0, 1]", c.RealRatio)
	p.hidden(c.Hidden)
	p.check(c.Gamma > 0 && c.Gamma <= 1, "gamma %v must be in (0, 1]", c.Gamma)
	p.check(c.ActorLR > 0, "actor learning rate %v must be positive", c.ActorLR)
	c.RuntimeSettings.validate(&p)
	c.RuntimeSettings.rolloutDevice(&p, c.Algo)
	p.check(c.EnvFile == "" || filepath.IsAbs(c.EnvFile) && c.Env != "", "env file %q must be an absolute path of the task %q", c.EnvFile, c.Env)
	p.check(c.Remote == nil || remote.IsAddress(c.Env) && c.EnvFile == "",
		"env %q: remote settings go with a remote environment's address (and no env file)", c.Env)
	p.check(!remote.IsAddress(c.Env) || c.EnvFile == "", "env %s is a remote environment's address and env file %s a task file: give one", c.Env, c.EnvFile)
	if c.Algo != "bc" {
		p.check(c.CriticLR > 0 && c.AlphaLR > 0 && c.Alpha > 0, "critic lr %v, alpha lr %v and initial alpha %v must be positive",
			c.CriticLR, c.AlphaLR, c.Alpha)
		p.check(c.RolloutEvery > 0 && c.RolloutBatch > 0 && c.Horizon > 0, "roll-out every %d, batch %d and horizon %d must be positive",
			c.RolloutEvery, c.RolloutBatch, c.Horizon)
		p.check(c.Penalty >= 0, "penalty %v must be >= 0", c.Penalty)
		p.check(c.ModelRetain > 0, "model retain %d must be positive", c.ModelRetain)
	}
	c.ModelSettings.validate(&p, c.Algo, "mopo", c.Device)
	return p.err("offline config")
}

// JSON returns the indented config.
func (c OfflineConfig) JSON() []byte { return configJSON(c) }

// Task returns the task the run evaluates in: the built-in task Env, or
// the task file EnvFile, which must still have the content (EnvDigest)
// the run started with. Runs on data that name no task have none (an
// error).
func (c OfflineConfig) Task() (*envs.Task, error) {
	if c.Env == "" {
		return nil, fmt.Errorf("train: the run's data name no task")
	}
	if remote.IsAddress(c.Env) {
		return nil, fmt.Errorf("train: the run evaluates in the remote environment %s: no task file or simulator here", c.Env)
	}
	return runTask(c.Env, c.EnvFile, c.EnvDigest)
}

// TotalSteps is the number of policy updates of the whole run.
func (c OfflineConfig) TotalSteps() int { return c.Epochs * c.StepsPerEpoch }

// ModelBufferSize is the model buffer's capacity: ModelRetain roll-outs of
// RolloutBatch starts and Horizon steps.
func (c OfflineConfig) ModelBufferSize() int { return c.ModelRetain * c.RolloutBatch * c.Horizon }

// dynamicsConfig maps the model settings onto the dynamics model's. Until
// 2026-11-25 it passed no learning rate, so the offline ADM fitted at
// 3e-4 (the presets' model_lr) whatever --model-lr said; runs at the
// presets' value are unchanged (the fingerprints of scripts/fingerprint_runs.sh).
func (c OfflineConfig) dynamicsConfig() dynamics.Config {
	return c.ModelSettings.dynamicsConfig(c.Env, c.Seed)
}
