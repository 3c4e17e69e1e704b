package schema

// Tensor names of the exported graphs' inputs and outputs.
const (
	Obs         = "obs"           // observation (ADM graphs: the start state)
	Noise       = "noise"         // actor: standard normal noise
	Act         = "act"           // critic, ensemble, ADM step: one action
	Actions     = "actions"       // ADM: action sequence, sequence-first
	Lengths     = "lengths"       // ADM: steps per row (int32)
	Hidden      = "hidden"        // ADM step: GRU state in
	Action      = "action"        // actor: sampled action
	MeanAction  = "mean_action"   // actor: deterministic action
	Q           = "q"             // critic: Q value
	NextObsMean = "next_obs_mean" // ADM graphs: predicted next observation
	RewardMean  = "reward_mean"   // ADM graphs: predicted reward
	LogVar      = "logvar"        // ADM graphs, ensemble: log-variance
	AllMean     = "all_mean"      // ADM with all_steps: mean after every step
	HiddenOut   = "hidden_out"    // ADM step: GRU state out
	Mean        = "mean"          // ensemble: members' mean of [delta, reward]
	DropoutMask = "dropout_mask"  // ADM graphs with MC dropout: keep flags
)

// Signature is the ordered input and output tensor names of one model kind.
type Signature struct {
	Inputs  []string
	Outputs []string
}

// Each function below returns a new Signature, so callers may change it.

// Actor returns the actor's (policy's) signature; a behaviour-cloning policy
// has the same.
func Actor() Signature {
	return Signature{Inputs: []string{Obs, Noise}, Outputs: []string{Action, MeanAction}}
}

// Critic returns the critic's signature.
func Critic() Signature {
	return Signature{Inputs: []string{Obs, Act}, Outputs: []string{Q}}
}

// ADM returns the direct (whole-plan) ADM's signature, without the optional
// dropout_mask input and all_mean output.
func ADM() Signature {
	return Signature{Inputs: []string{Obs, Actions, Lengths}, Outputs: []string{NextObsMean, RewardMean, LogVar}}
}

// ADMStep returns the incremental ADM step's signature, without the
// optional dropout_mask input.
func ADMStep() Signature {
	return Signature{Inputs: []string{Hidden, Obs, Act}, Outputs: []string{HiddenOut, NextObsMean, RewardMean, LogVar}}
}

// Ensemble returns the dynamics ensemble's signature.
func Ensemble() Signature {
	return Signature{Inputs: []string{Obs, Act}, Outputs: []string{Mean, LogVar}}
}

// Metadata keys (metadata_props) written by the exporter. Callers may add
// any other key (e.g. "task").
const (
	MetaModel     = "admpo_model"   // model kind: one of the Kind* values
	MetaVersion   = "admpo_version" // exporter version
	MetaObsDim    = "obs_dim"
	MetaActDim    = "act_dim"
	MetaM         = "m"            // ADM: maximum backtracking length
	MetaHidden    = "hidden"       // ADM: GRU width; ensemble: hidden widths
	MetaLayers    = "layers"       // ADM: GRU layers
	MetaResBlocks = "res_blocks"   // ADM: head ResBlocks
	MetaADMForm   = "adm_form"     // ADM: "gru", "unrolled" or "packed"; ADM step: "gru" (absent: unrolled)
	MetaAllSteps  = "all_steps"    // ADM: "true" when all_mean is an output
	MetaDropout   = "dropout"      // ADM, ADM step: MC dropout probability (absent: none)
	MetaFreshRows = "fresh_rows"   // ADM step: "true" when hidden may hold fewer rows than obs
	MetaNormMean  = "norm_mean"    // ADM, ensemble: input normaliser mean over [obs, act]
	MetaNormStd   = "norm_std"     // ADM, ensemble: input normaliser std
	MetaMembers   = "members"      // ensemble: member count
	MetaElites    = "elites"       // ensemble: elite member indices
	MetaScale     = "action_scale" // actor
	MetaBias      = "action_bias"  // actor
	MetaLogStdMin = "log_std_min"  // actor
	MetaLogStdMax = "log_std_max"  // actor

	// MetaTask is written by the caller, not the exporter: the task
	// (environment) the model was trained for.
	MetaTask = "task"
)

// Model kinds: the values of MetaModel.
const (
	KindActor    = "actor"
	KindCritic   = "critic"
	KindADM      = "adm"
	KindADMStep  = "adm_step"
	KindEnsemble = "ensemble"
)
