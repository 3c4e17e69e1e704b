package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
)

// ModelSettings are the dynamics model settings that OnlineConfig and
// OfflineConfig share: the ADM's and the ensemble's sizes, the model fit's
// rules and the ADM's roll-out engine. Both configs embed it, so its keys
// stay flat in config.json.
type ModelSettings struct {
	M              int     `json:"m"` // ADM maximum backtracking length
	ADMHidden      int     `json:"adm_hidden"`
	ADMLayers      int     `json:"adm_layers"`
	ADMResBlocks   int     `json:"adm_res_blocks"`
	Ensemble       int     `json:"ensemble"` // MBPO / MOPO members
	Elites         int     `json:"elites"`
	ModelLR        float64 `json:"model_lr"`         // the ADM's learning rate (admpo)
	ModelMaxEpochs int     `json:"model_max_epochs"` // cap on epochs per model fit (0: until early stop)
	ModelPatience  int     `json:"model_patience"`   // epochs without holdout improvement before stopping
	// ModelEpochSteps caps the Adam steps of one fit epoch, each followed
	// by a holdout check (0: full passes over the data). Offline configs
	// leave the key out when it is 0; online ones always write it
	// (OnlineConfig.MarshalJSON).
	ModelEpochSteps int `json:"model_epoch_steps,omitempty"`
	// ModelEpochPasses is how many passes over the ADM's train starts make
	// one fit epoch (1 when absent); the online paper preset uses m, so
	// that an epoch is as many Adam steps as the authors' (train/256·m, one
	// k per batch) while each step still unrolls all k.
	ModelEpochPasses int `json:"model_epoch_passes"`
	// ModelImprove is the ADM's early-stopping test: "scaled" (the holdout
	// MSE with each target scaled by its variance improved; when absent) or
	// "authors" (some k's holdout MSE and the mean over k improved).
	ModelImprove string `json:"model_improve"`
	// ModelFitK is what each ADM Adam step trains: "all" (every k = 1..m
	// of its starts at once; also when absent, as every preset leaves it)
	// or "one" (the authors' step: one k drawn per Adam step, a k-step
	// unroll with the head at step k; dynamics.ADMFitConfig.OneK). The
	// one-k fit runs on the CPU only.
	ModelFitK string `json:"model_fit_k,omitempty"`
	// EnsembleLR is the ensemble's learning rate (mbpo, mopo); absent (0)
	// it is MBPO's 1e-3, what runs before the key used.
	EnsembleLR   float64 `json:"ensemble_lr,omitempty"`
	ModelMaxHold int     `json:"model_max_holdout"` // most transitions (ensemble) or start states (ADM) held out per fit
	Engine       string  `json:"engine"`            // ADM roll-out engine: "incremental" or "direct"
	// RolloutDropout keeps the ADM's ResBlock dropout (models.ADMDropout)
	// on in roll-outs, in U^ADM and in the fit's holdout validation, as the
	// authors' model, never put in eval mode (false when absent).
	RolloutDropout bool `json:"rollout_dropout"`
}

// legacyModel is the meaning of the model keys a version 1 config.json
// lacks.
var legacyModel = ModelSettings{ModelEpochPasses: 1, ModelImprove: "scaled"}

// dynamicsConfig maps the settings onto the dynamics model's for a task
// and seed.
func (m ModelSettings) dynamicsConfig(task string, seed int64) dynamics.Config {
	return dynamics.Config{Task: task, Seed: seed, M: m.M, ADMHidden: m.ADMHidden, ADMLayers: m.ADMLayers,
		ADMResBlocks: m.ADMResBlocks, Ensemble: m.Ensemble, Elites: m.Elites, LR: m.ModelLR, EnsembleLR: m.EnsembleLR, MaxEpochs: m.ModelMaxEpochs,
		Patience: m.ModelPatience, EpochSteps: m.ModelEpochSteps, EpochPasses: m.ModelEpochPasses, Improve: m.ModelImprove,
		MaxHoldout: m.ModelMaxHold, Engine: m.Engine, RolloutDropout: m.RolloutDropout, OneK: m.ModelFitK == "one"}
}

// validate checks the settings that algo uses: the fit's for the model
// algorithms ("admpo" and ensembleAlgo), the ADM's sizes, engine and fit
// rules for "admpo", the ensemble's for ensembleAlgo; roll-out dropout
// belongs to the ADM only; the one-k ADM fit needs the CPU (device "" or
// "cpu", the run's RuntimeSettings.Device).
func (m ModelSettings) validate(p *problems, algo, ensembleAlgo, device string) {
	if algo == "admpo" || algo == ensembleAlgo {
		p.check(m.ModelPatience > 0, "model patience %d must be positive", m.ModelPatience)
		p.check(m.ModelMaxEpochs >= 0 && m.ModelMaxHold >= 0, "model max epochs %d / max holdout %d must be >= 0", m.ModelMaxEpochs, m.ModelMaxHold)
		p.check(m.ModelEpochSteps >= 0, "model epoch steps %d must be >= 0", m.ModelEpochSteps)
	}
	if algo == "admpo" {
		p.check(m.ModelLR > 0, "model learning rate %v must be positive", m.ModelLR)
		p.check(m.M >= 1, "m %d must be >= 1", m.M)
		p.check(m.ADMHidden > 0 && m.ADMLayers > 0 && m.ADMResBlocks >= 0, "ADM size %dx%d/%d invalid", m.ADMLayers, m.ADMHidden, m.ADMResBlocks)
		p.check(m.Engine == "incremental" || m.Engine == "direct", "engine %q must be incremental or direct", m.Engine)
		p.check(m.ModelEpochPasses >= 1, "model epoch passes %d must be >= 1", m.ModelEpochPasses)
		p.check(m.ModelImprove == "scaled" || m.ModelImprove == "authors", "model improve %q must be scaled or authors", m.ModelImprove)
		p.check(m.ModelFitK == "" || m.ModelFitK == "all" || m.ModelFitK == "one", "model fit k %q must be all or one", m.ModelFitK)
		p.check(m.ModelFitK != "one" || device == "" || device == "cpu",
			"model fit k one (one k per ADM Adam step) runs on the CPU only, not on device %s: use model fit k all there", device)
	}
	p.check(!m.RolloutDropout || algo == "admpo", "rollout dropout applies to the ADM (admpo), not %s", algo)
	if algo == ensembleAlgo {
		p.check(m.EnsembleLR >= 0, "ensemble learning rate %v must be >= 0 (0: MBPO's 1e-3)", m.EnsembleLR)
		p.check(m.Ensemble > 0 && m.Elites > 0 && m.Elites <= m.Ensemble, "ensemble %d / elites %d invalid", m.Ensemble, m.Elites)
	}
}

// RuntimeSettings are the run settings that OnlineConfig and OfflineConfig
// share: evaluation and checkpoint intervals in the run's own steps, and
// the threads and provider the run computes with. Both configs embed it,
// so its keys stay flat in config.json.
type RuntimeSettings struct {
	EvalEpisodes int `json:"eval_episodes"` // deterministic episodes per evaluation
	// CheckpointEvery is the run steps between checkpoints: env steps
	// online, policy updates offline.
	CheckpointEvery int    `json:"checkpoint_every"`
	Threads         int    `json:"threads"`      // ONNX Runtime intra-op threads (0: default)
	BLASThreads     int    `json:"blas_threads"` // OpenBLAS threads for training (0: leave as is)
	Provider        string `json:"provider"`     // ONNX Runtime provider: cpu or cuda
	// Device runs SAC's updates: cpu (package sac), emu or cuda (the device
	// learner, package sacdev); "" is cpu. BC's steps (sacdev.BC) and the
	// ADM's and the ensemble's fits (packages admdev, ensdev) run on the
	// same device.
	Device string `json:"device,omitempty"`
	// RolloutDevice rolls the ADM out on a device (admpo only): emu or cuda
	// (dynamics.Config.RollDevice); "" is ONNX Runtime (Provider). A seed
	// gives ONNX Runtime's transitions within float32 rounding at the same
	// chunk rows.
	RolloutDevice string `json:"rollout_device,omitempty"`
}

// validate checks the evaluation and checkpoint intervals and the
// provider.
func (r RuntimeSettings) validate(p *problems) {
	p.check(r.EvalEpisodes > 0, "eval episodes %d must be positive", r.EvalEpisodes)
	p.check(r.CheckpointEvery > 0, "checkpoint every %d must be positive", r.CheckpointEvery)
	p.check(infer.CheckProvider(r.Provider) == nil, "provider %q must be cpu or cuda", r.Provider)
	if err := CheckDevice(r.Device); err != nil {
		p.check(false, "%s", strings.TrimPrefix(err.Error(), "train: "))
	}
	if err := CheckRolloutDevice(r.RolloutDevice); err != nil {
		p.check(false, "%s", strings.TrimPrefix(err.Error(), "train: "))
	}
}

// rolloutDevice checks that algo rolls out on the roll-out device, if one
// is set: only the ADM (admpo) has a device roll-out.
func (r RuntimeSettings) rolloutDevice(p *problems, algo string) {
	p.check(r.RolloutDevice == "" || algo == "admpo",
		"rollout device %s rolls the ADM out (admpo only): %s's roll-outs stay on ONNX Runtime (sac and bc have none); leave it unset",
		r.RolloutDevice, algo)
}

// inferOptions are the ONNX Runtime options of the run's roll-outs.
func (r RuntimeSettings) inferOptions() infer.Options {
	return infer.Options{Provider: r.Provider, Threads: r.Threads}
}

// LegacyKeys maps config.json keys that earlier versions wrote to the keys
// that hold those settings now (one key per setting, online and offline).
// The config readers, and --config files, take an old key unless the new
// one is given too.
var LegacyKeys = map[string]string{"init_alpha": "alpha"}

// renameLegacyKeys returns the JSON object b with its LegacyKeys renamed
// (b itself when it holds none); holding both names of one setting is an
// error.
func renameLegacyKeys(b []byte) ([]byte, error) {
	found := false
	for old := range LegacyKeys {
		found = found || bytes.Contains(b, []byte(`"`+old+`"`))
	}
	if !found {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	renamed := false
	for old, cur := range LegacyKeys {
		v, ok := m[old]
		if !ok {
			continue
		}
		if _, both := m[cur]; both {
			return nil, fmt.Errorf("train: config holds both %q and %q, its old name: keep %q", cur, old, cur)
		}
		m[cur], renamed = v, true
		delete(m, old)
	}
	if !renamed {
		return b, nil
	}
	return json.Marshal(m)
}

// jsonMember is one key and its value of a JSON object.
type jsonMember struct {
	key   string
	value json.RawMessage
}

// newJSONMember is key with v marshalled as its value.
func newJSONMember(key string, v any) (jsonMember, error) {
	b, err := json.Marshal(v)
	return jsonMember{key, b}, err
}

// objectMembers splits the JSON object b into its members, in order.
func objectMembers(b []byte) ([]jsonMember, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("train: not a JSON object: %.40q", b)
	}
	var ms []jsonMember
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("train: JSON object key: %w", err)
		}
		m := jsonMember{key: t.(string)}
		if err := dec.Decode(&m.value); err != nil {
			return nil, fmt.Errorf("train: JSON object value of %q: %w", m.key, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// joinMembers is the JSON object of ms, in order.
func joinMembers(ms []jsonMember) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
