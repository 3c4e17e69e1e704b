package train

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/sac"
)

// ConfigVersion is the config.json format that this code writes. Version 1
// (configs without a "config_version" key, written before the fidelity
// change) counts the warm-up inside steps, runs the roll-out schedule on env
// steps, reads target_entropy as the entropy of the squashed action in
// [-1,1], trains the ADM one pass per epoch and draws roll-out starts from
// any stored state; version 2 does as the authors' code (docs/fidelity.md).
const ConfigVersion = 2

// OnlineConfig is everything an online run (ADMPO-ON, MBPO or SAC) needs.
// It is saved as the run directory's config.json.
type OnlineConfig struct {
	Env string `json:"env"`
	// EnvFile is the absolute path of the task file a run on one
	// (--env-file) plays, Env its task's name and EnvDigest the SHA-256 of
	// the file's and its MJCF model's content (envs.Task.Digest): a resume
	// or an export refuses a file that changed since.
	EnvFile   string `json:"env_file,omitempty"`
	EnvDigest string `json:"env_file_sha256,omitempty"`
	// Termination is model roll-outs' termination rule: "task" (the task's
	// rule on observations), "none", or "learned" (fitted on the real
	// transitions' terminals before every roll-out; none seen: roll-outs
	// never terminate); "" is "task", or "learned" for a remote environment
	// (RolloutTermination).
	Termination string `json:"termination,omitempty"`
	Algo        string `json:"algo"` // "admpo", "mbpo" or "sac"
	Preset      string `json:"preset"`
	Seed        int64  `json:"seed"`
	// Version is the config format (ConfigVersion; 1 when the key is absent).
	Version int `json:"config_version"`
	// Steps is the number of learning env steps after the warm-up (version
	// 2; version 1: all env steps, warm-up included). TotalSteps is the
	// number of env steps of the run.
	Steps int `json:"steps"`

	WarmUp         int     `json:"warmup_steps"`     // uniform random steps before learning
	UpdatesPerStep int     `json:"updates_per_step"` // G: policy updates per env step
	Batch          int     `json:"batch"`            // SAC batch size
	RealRatio      float64 `json:"real_ratio"`       // share of real transitions in a batch (model-based algos)
	// TargetEntropy is the entropy target of the policy's actions in the
	// task's action units (version 2, as the authors' log-probability with
	// the action scale); version 1: of the squashed action in [-1,1].
	TargetEntropy float64 `json:"target_entropy"`
	ActorEvery    int     `json:"actor_every"` // critic updates per actor and alpha update (1: every one)
	Alpha         float64 `json:"alpha"`       // initial (auto_alpha) or fixed entropy coefficient
	AutoAlpha     bool    `json:"auto_alpha"`  // tune alpha towards the target entropy
	LR            float64 `json:"lr"`          // actor, critic and alpha learning rate
	Tau           float64 `json:"tau"`         // Polyak rate of the target critics
	Hidden        []int   `json:"hidden"`

	ModelEvery   int      `json:"model_every"`      // env steps between model re-fits and roll-outs
	RolloutBatch int      `json:"rollout_batch"`    // start sequences per roll-out
	Rollout      Schedule `json:"rollout_schedule"` // roll-out length over env steps
	ModelRetain  int      `json:"model_retain"`     // roll-out rounds the model buffer keeps

	ModelSettings
	// ModelWarmStart keeps training the ADM across fits instead of
	// re-initialising it (config.json has it after model_lr).
	ModelWarmStart bool `json:"model_warm_start"`
	// ModelStepsPerRow sizes each fit by the real data that arrived since
	// the last one: at most ceil(ModelStepsPerRow · new transitions) Adam
	// steps (the first fit counts every transition); 0: no cap, the fit
	// runs until early stopping (the paper). config.json has it after
	// model_epoch_steps.
	ModelStepsPerRow float64 `json:"model_steps_per_row"`

	EvalEvery int `json:"eval_every"` // env steps between evaluations
	RuntimeSettings

	// Remote is a remote environment's record (Env is then its address,
	// tcp://HOST:PORT or unix:///PATH); nil for the built-in tasks.
	Remote *RemoteEnv `json:"remote,omitempty"`
}

// RemoteEnv records a remote environment in config.json: its sizes, action
// bounds and episode limit as its server announced them when the run
// started (a resumed run checks that the server still serves the same),
// and how long to wait for an answer.
type RemoteEnv struct {
	ObsDim          int       `json:"obs_dim"`
	ActDim          int       `json:"act_dim"`
	ActionLow       []float64 `json:"action_low"`
	ActionHigh      []float64 `json:"action_high"`
	MaxEpisodeSteps int       `json:"max_episode_steps"`
	// TimeoutS is how many seconds to wait for a connection or an answer
	// (--env-timeout; 0: remote.DefaultTimeout).
	TimeoutS float64 `json:"timeout_s"`
}

// IsRemote reports whether the run plays a remote environment.
func (c OnlineConfig) IsRemote() bool { return remote.IsAddress(c.Env) }

// RolloutTermination is the roll-outs' termination rule in effect: the
// config's Termination, or when it is "" the task's rule ("task") or, for a
// remote environment (which has none), "learned".
func (c OnlineConfig) RolloutTermination() string {
	switch {
	case c.Termination != "":
		return c.Termination
	case c.IsRemote():
		return "learned"
	}
	return "task"
}

// legacyOnline is the meaning of the keys a version 1 config.json lacks.
var legacyOnline = OnlineConfig{Version: 1, ActorEvery: 1, Alpha: 0.2, AutoAlpha: true, ModelSettings: legacyModel}

// UnmarshalJSON reads a config.json; keys it lacks keep the values that
// reproduce the run as the code that wrote it ran it (legacyOnline), and
// old key names (LegacyKeys) are read as their new ones.
func (c *OnlineConfig) UnmarshalJSON(b []byte) error {
	type plain OnlineConfig
	p := plain(legacyOnline)
	b, err := renameLegacyKeys(b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = OnlineConfig(p)
	return nil
}

// MarshalJSON writes config.json with the keys in the order online configs
// have always had: the online-only model_warm_start and
// model_steps_per_row among the shared model keys (ModelSettings), and
// model_epoch_steps even when it is 0.
func (c OnlineConfig) MarshalJSON() ([]byte, error) {
	type plain OnlineConfig
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	ms, err := objectMembers(b)
	if err != nil {
		return nil, err
	}
	warm, err := newJSONMember("model_warm_start", c.ModelWarmStart)
	if err != nil {
		return nil, err
	}
	epochSteps, err := newJSONMember("model_epoch_steps", c.ModelEpochSteps)
	if err != nil {
		return nil, err
	}
	perRow, err := newJSONMember("model_steps_per_row", c.ModelStepsPerRow)
	if err != nil {
		return nil, err
	}
	out := make([]jsonMember, 0, len(ms)+1)
	for _, m := range ms {
		switch m.key {
		case warm.key, epochSteps.key, perRow.key:
			continue
		}
		out = append(out, m)
		switch m.key {
		case "model_lr":
			out = append(out, warm)
		case "model_patience":
			out = append(out, epochSteps, perRow)
		}
	}
	return joinMembers(out), nil
}

// TotalSteps is the run's number of env steps: the warm-up and Steps
// learning steps (version 1: Steps).
func (c OnlineConfig) TotalSteps() int {
	if c.Version < 2 {
		return c.Steps
	}
	return c.WarmUp + c.Steps
}

// ScheduleStep is the step the roll-out length schedule reads at env step
// t: the learning step t - WarmUp (0 at the first learning step), as the
// authors' code (version 1: t).
func (c OnlineConfig) ScheduleStep(t int) int {
	if c.Version < 2 {
		return t
	}
	return t - c.WarmUp
}

// FullHistoryStarts tells whether roll-outs start only from states with a
// full history of m-1 earlier steps in their episode (the authors' rule;
// version 2).
func (c OnlineConfig) FullHistoryStarts() bool { return c.Version >= 2 }

// SACTargetEntropy is the target entropy in the units of admpo's SAC
// log-density, which leaves out the action scale: the authors' log pi has
// -sum(log scale) more, so a target T on it is T - sum(log scale) on ours
// (version 2; version 1 passes TargetEntropy through).
func (c OnlineConfig) SACTargetEntropy(low, high []float64) float64 {
	return sacTargetEntropy(c.Version, c.TargetEntropy, low, high)
}

// sacConfig maps the policy settings onto SAC's for a task's action bounds.
func (c OnlineConfig) sacConfig(low, high []float64) sac.Config {
	sc := sac.DefaultConfig(len(low))
	sc.Hidden, sc.BatchSize, sc.Seed, sc.Tau = c.Hidden, c.Batch, c.Seed, c.Tau
	sc.TargetEntropy = c.SACTargetEntropy(low, high)
	sc.InitAlpha, sc.AutoAlpha, sc.ActorEvery = c.Alpha, c.AutoAlpha, c.ActorEvery
	sc.ActorLR, sc.CriticLR, sc.AlphaLR = c.LR, c.LR, c.LR
	return sc
}

// dynamicsConfig maps the model settings onto the dynamics model's.
func (c OnlineConfig) dynamicsConfig() dynamics.Config {
	dc := c.ModelSettings.dynamicsConfig(c.Env, c.Seed)
	dc.WarmStart = c.ModelWarmStart
	return dc
}

// sacTargetEntropy is target t (in the config's version's units) in the
// units of admpo's SAC log-density.
func sacTargetEntropy(version int, t float64, low, high []float64) float64 {
	if version < 2 {
		return t
	}
	return t - LogActionScale(low, high)
}

// LogActionScale is sum_j log((high_j - low_j)/2), the log-volume that the
// tanh-squashed action's scale adds: 0 for bounds of +-1, 17·log 0.4 ≈
// -15.58 for Humanoid.
func LogActionScale(low, high []float64) float64 {
	s := 0.0
	for j := range low {
		s += math.Log((high[j] - low[j]) / 2)
	}
	return s
}

// Algos lists the online algorithms.
var Algos = []string{"admpo", "mbpo", "sac"}

// paperOnline holds the paper's per-task ADMPO-ON values (Table
// admpo_on_hyper) with the authors' per-task configs (config/mujoco/*.yml:
// actor_freq, model_retain_steps); tasks the paper does not list use
// hopper-like MBPO values.
var paperOnline = map[string]struct {
	steps, m, hidden, every int
	sched                   Schedule
	entropy                 float64
	retain                  int // model_retain_steps / interval: roll-out rounds in the model buffer
	actorEvery              int // actor_freq
}{
	"hopper":            {50000, 5, 200, 250, Schedule{0, 50000, 1, 15}, -1, 1000 / 250, 1},
	"walker2d":          {200000, 2, 200, 250, Schedule{0, 100000, 1, 10}, -3, 1000 / 250, 20},
	"ant":               {300000, 2, 400, 500, Schedule{10000, 100000, 1, 5}, -4, 2500 / 500, 20},
	"humanoid":          {300000, 2, 400, 1000, Schedule{10000, 100000, 1, 10}, -8, 5000 / 1000, 20},
	"halfcheetah":       {400000, 2, 200, 250, Schedule{20000, 150000, 1, 1}, -3, 1000 / 250, 1},
	"inverted-pendulum": {15000, 2, 200, 250, Schedule{0, 10000, 1, 15}, -1, 1000 / 250, 1},
}

// Preset returns the named preset for a task and algorithm: "paper" (the
// paper's values) or "quick" (a small budget that shows learning on two
// CPU cores in minutes).
func Preset(name, env, algo string, actDim int) (OnlineConfig, error) {
	p, ok := paperOnline[env]
	if !ok && remote.IsAddress(env) {
		// A remote environment: hopper's values, with SAC's usual target
		// entropy of -1 per action value.
		p, ok = paperOnline["hopper"], true
		p.entropy = -float64(actDim)
	}
	if !ok {
		return OnlineConfig{}, fmt.Errorf("train: no online preset for task %q", env)
	}
	// Steps are learning steps after the 5000 warm-up steps; the authors'
	// SAC starts at log alpha 0 (alpha 1) and tunes it.
	c := OnlineConfig{Env: env, Algo: algo, Preset: name, Version: ConfigVersion, Steps: p.steps,
		WarmUp: 5000, UpdatesPerStep: 20, Batch: 256, RealRatio: 0.05, TargetEntropy: p.entropy,
		ActorEvery: p.actorEvery, Alpha: 1, AutoAlpha: true, LR: 3e-4, Tau: 0.005,
		Hidden: []int{256, 256}, ModelEvery: p.every, RolloutBatch: 100000, Rollout: p.sched, ModelRetain: p.retain,
		ModelSettings: ModelSettings{M: p.m, ADMHidden: p.hidden, ADMLayers: 3, ADMResBlocks: 4, Ensemble: 7, Elites: 5,
			ModelLR: 3e-4, ModelPatience: 25, ModelEpochPasses: p.m, ModelImprove: "scaled", ModelMaxHold: 500, Engine: "direct"},
		EvalEvery:       1000,
		RuntimeSettings: RuntimeSettings{EvalEpisodes: 10, CheckpointEvery: 5000, Provider: "cpu", Device: "cpu", BLASThreads: 1}}
	if algo != "admpo" {
		c.ModelEpochPasses = 1
	}
	c.RolloutDropout = algo == "admpo"
	if algo == "mbpo" {
		c.ModelPatience, c.ModelMaxHold, c.EnsembleLR = 5, 5000, 1e-3
	}
	switch name {
	case "paper":
	case "cpu":
		// The paper's algorithm and budget on one CPU core in hours
		// (docs/results-online.md, "The cpu preset", has each change's
		// measured effect): the model is trained on from fit to fit (as
		// MBPO's ensemble always is) with a budget of Adam steps that follows
		// the new data, 0.8 per new real transition (200 per 250-step round;
		// the first fit 4000), in epochs of 50 steps, each followed by a
		// holdout check; and 25k roll-out starts per round instead of 100k.
		// SAC, the schedules, the model sizes and everything else are the
		// paper's.
		c.ModelWarmStart, c.ModelStepsPerRow, c.ModelEpochSteps = true, 0.8, 50
		c.RolloutBatch = 25000
		// With this budget of Adam steps the ADM fits closer at 1e-3 than at
		// the authors' 3e-4 (chosen on model error, not on returns: on the
		// same hopper buffers a 15k-step fit, and over a whole run a 2-6x
		// lower holdout error at equal env steps; "The ADM's learning
		// rate" in docs/results-online.md). MBPO's ensemble has its own
		// rate (EnsembleLR, 1e-3); the paper preset keeps the authors' 3e-4.
		if algo == "admpo" {
			c.ModelLR = 1e-3
		}
	case "quick":
		// Two CPU cores, minutes per run: 128x128 SAC networks, 10 updates per
		// step, a smaller ADM and roll-out batch, shorter schedules; same loop.
		// Steps count after the warm-up: 1000 + 3000 = 4000 env steps.
		// Alpha starts at 0.2 and the actor updates at every step, the
		// settings the quick runs were tuned with; one ADM pass per epoch.
		c.Steps, c.WarmUp, c.UpdatesPerStep, c.Hidden = 3000, 1000, 10, []int{128, 128}
		c.Alpha, c.ActorEvery, c.ModelEpochPasses = 0.2, 1, 1
		c.RolloutDropout = false
		c.RolloutBatch, c.ModelEvery = 5000, 250
		// One round in the model buffer (MBPO's sizing would keep 4 here;
		// --model-retain 4 gives it): each round is fresh from the latest
		// model and policy.
		c.ModelRetain = 1
		c.Rollout = Schedule{0, 3000, 1, min(p.sched.To, 5)}
		c.ADMHidden, c.ADMLayers, c.ADMResBlocks = 128, 2, 2
		c.Ensemble, c.Elites = 5, 3
		c.ModelMaxEpochs, c.ModelPatience = 60, 10
		// Few, small fits: continue training the ADM from fit to fit (as
		// MBPO does with its ensemble) instead of starting over each time.
		c.ModelWarmStart = true
		c.EvalEvery, c.EvalEpisodes, c.CheckpointEvery = 500, 5, 1000
		if env == "inverted-pendulum" {
			// Small networks, a faster learning rate and target (the settings
			// with which SAC solves it in ~6k steps, sac/pendulum_test.go).
			c.Steps, c.WarmUp, c.EvalEvery = 5000, 1000, 500
			c.Hidden, c.Batch, c.LR, c.Tau = []int{64, 64}, 128, 1e-3, 0.02
			c.Rollout = Schedule{0, 5000, 1, 5}
		}
	default:
		return OnlineConfig{}, unknownPreset(name)
	}
	return c, c.Validate()
}

// MinWarmUp is the shortest warm-up with which the first model fit (at
// the warm-up's end) can run: 2 transitions (one to train on, one to hold
// out), and for ADMPO m-1 (a full roll-out start needs an episode that
// long); 0 for SAC, which fits no model.
func (c OnlineConfig) MinWarmUp() int {
	switch c.Algo {
	case "sac":
		return 0
	case "admpo":
		return max(2, c.M-1)
	}
	return 2
}

// Validate checks the configuration's values and their consistency.
func (c OnlineConfig) Validate() error {
	var p problems
	p.algoVersion(c.Algo, Algos, c.Version)
	p.check(c.Steps > 0, "steps %d must be positive", c.Steps)
	p.check(c.WarmUp >= 0 && c.WarmUp < c.TotalSteps(), "warm-up %d must be in [0, total steps %d)", c.WarmUp, c.TotalSteps())
	p.check(c.ActorEvery >= 1, "actor every %d must be >= 1", c.ActorEvery)
	p.check(c.Alpha > 0 && !math.IsInf(c.Alpha, 0), "alpha %v must be positive and finite", c.Alpha)
	p.check(!math.IsNaN(c.TargetEntropy) && !math.IsInf(c.TargetEntropy, 0), "target entropy %v must be finite", c.TargetEntropy)
	p.check(c.UpdatesPerStep >= 0, "updates per step %d must be >= 0", c.UpdatesPerStep)
	p.check(c.Batch > 0, "batch %d must be positive", c.Batch)
	p.check(c.RealRatio >= 0 && c.RealRatio <= 1, "real ratio %v must be in [0, 1]", c.RealRatio)
	p.check(c.LR > 0, "learning rate %v must be positive", c.LR)
	p.check(c.Tau > 0 && c.Tau <= 1, "tau %v must be in (0, 1]", c.Tau)
	p.hidden(c.Hidden)
	p.check(c.EvalEvery > 0, "eval every %d must be positive", c.EvalEvery)
	p.check(c.Termination == "" || slices.Contains(Terminations, c.Termination), "termination %q must be one of %s",
		c.Termination, strings.Join(Terminations, ", "))
	p.check(c.EnvFile == "" || filepath.IsAbs(c.EnvFile), "env file %q must be an absolute path", c.EnvFile)
	c.RuntimeSettings.validate(&p)
	c.RuntimeSettings.rolloutDevice(&p, c.Algo)
	if c.Algo != "sac" {
		need, why := c.MinWarmUp(), "one to train on and one to hold out"
		if c.Algo == "admpo" && c.M-1 > 2 {
			why = fmt.Sprintf("a full roll-out start needs an episode of m-1 = %d", c.M-1)
		}
		if c.M-1 > c.TotalSteps() { // an m beyond the run's length: the memory check (cmd) names it
			need = 2
		}
		p.check(c.WarmUp >= need, "warm-up %d is too short for %s: the first model fit, at its end, needs at least %d transitions (%s)",
			c.WarmUp, c.Algo, need, why)
		p.check(c.ModelEvery > 0, "model every %d must be positive", c.ModelEvery)
		p.check(c.RolloutBatch > 0, "roll-out batch %d must be positive", c.RolloutBatch)
		p.check(c.Rollout.Validate() == nil, "roll-out schedule %v is invalid", c.Rollout)
		p.check(c.ModelRetain > 0, "model retain %d must be positive", c.ModelRetain)
		p.check(c.ModelStepsPerRow >= 0 && !math.IsInf(c.ModelStepsPerRow, 0), "model steps per row %v must be finite and >= 0", c.ModelStepsPerRow)
	}
	c.ModelSettings.validate(&p, c.Algo, "mbpo", c.Device)
	if c.IsRemote() {
		p.check(c.EnvFile == "", "env %s is a remote environment's address and env file %s a task file: give one", c.Env, c.EnvFile)
		p.check(c.Termination != "task", "termination task for the remote environment %s, which has no rule on observations: use learned or none", c.Env)
	}
	if r := c.Remote; r != nil {
		p.check(c.IsRemote(), "remote settings for env %q, which is not an address (tcp://HOST:PORT or unix:///PATH)", c.Env)
		p.check(r.TimeoutS >= 0 && !math.IsInf(r.TimeoutS, 0), "env timeout %vs must be finite and >= 0", r.TimeoutS)
	}
	return p.err("config")
}

// JSON returns the indented config.
func (c OnlineConfig) JSON() []byte { return configJSON(c) }

// ModelBufferSize is MBPO's model buffer capacity: the transitions of
// ModelRetain roll-out rounds at the longest scheduled length.
func (c OnlineConfig) ModelBufferSize() int {
	return c.ModelRetain * c.RolloutBatch * max(c.Rollout.From, c.Rollout.To)
}

// Task returns the task the run plays: the built-in task Env, or the task
// file EnvFile, which must still have the content (EnvDigest) the run
// started with.
func (c OnlineConfig) Task() (*envs.Task, error) { return runTask(c.Env, c.EnvFile, c.EnvDigest) }

// runTask is a run's task: the built-in task env, or the task file file,
// which must still have the content digest the run started with (when
// recorded) and name the task env.
func runTask(env, file, digest string) (*envs.Task, error) {
	if file == "" {
		return envs.Lookup(env)
	}
	t, err := envs.LoadTaskFile(file)
	if err != nil {
		return nil, fmt.Errorf("train: the run's task file: %w", err)
	}
	if digest != "" && t.Digest != digest {
		return nil, fmt.Errorf("train: the task file %s or its model %s changed since the run started (sha256 %s, now %s)",
			file, t.Model, digest, t.Digest)
	}
	if t.Name != env {
		return nil, fmt.Errorf("train: the task file %s names task %q, the run %q", file, t.Name, env)
	}
	return t, nil
}
