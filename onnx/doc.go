// Package onnx exports admpo's networks (models.Actor, models.Critic,
// models.ADM, models.Ensemble) as ONNX files for ONNX Runtime. It writes the
// protobuf directly with protowire, so it registers no protobuf names and
// links beside github.com/owulveryck/onnx-go.
//
// Every model uses IR version 8 and opset ai.onnx 17, float32 data and a
// symbolic first dimension "batch". Inputs and outputs:
//
//	actor:    obs [batch, obs_dim], noise [batch, act_dim]
//	          -> action [batch, act_dim] = scale·tanh(mean + exp(logstd)·noise) + bias,
//	             mean_action [batch, act_dim] = scale·tanh(mean) + bias
//	critic:   obs [batch, obs_dim], act [batch, act_dim] -> q [batch, 1]
//	ADM:      obs [batch, obs_dim] (start state), actions [m, batch, act_dim]
//	          (sequence-first), lengths int32 [batch] (k per row, clamped to 1..m)
//	          -> next_obs_mean [batch, obs_dim] = obs + mean delta after k steps,
//	             reward_mean [batch, 1], logvar [batch, obs_dim+1] (soft-clamped),
//	             and with ADMOptions.AllSteps all_mean [m, batch, obs_dim+1]:
//	             the mean of [delta, reward] after every step j = 1..m.
//	ADM step: hidden [layers, batch, hidden], obs [batch, obs_dim] (start state),
//	          act [batch, act_dim] -> hidden_out [layers, batch, hidden],
//	          next_obs_mean, reward_mean, logvar as above for the step just taken.
//	          With MC dropout (ADMOptions.Dropout, ADMStepOptions.Dropout = p)
//	          both ADM graphs take dropout_mask [res_blocks, batch, hidden]:
//	          keep flags (1 or 0) of each row's ResBlock units, scaled by
//	          1/(1-p) inside the graph (metadata dropout = p).
//	ensemble: obs [batch, obs_dim], act [batch, act_dim]
//	          -> mean [members, batch, obs_dim+1] (of [delta, reward]),
//	             logvar [members, batch, obs_dim+1] (soft-clamped).
//
// Metadata (metadata_props) always holds admpo_model, admpo_version, obs_dim
// and act_dim, plus the keys listed in metadata.go for each kind; callers add
// their own keys (e.g. "task").
package onnx

// Format constants written into every model.
const (
	IRVersion    = 8       // ONNX IR version (onnx 1.12 and ONNX Runtime 1.30 read it)
	OpsetVersion = 17      // ai.onnx opset (the newest onnx 1.12 knows)
	ProducerName = "admpo" // ModelProto.producer_name
	Version      = "0.1.0" // admpo version written as producer_version and admpo_version
)

// Input and output names of the exported graphs.
const (
	NameObs         = "obs"
	NameNoise       = "noise"
	NameAct         = "act"
	NameActions     = "actions"
	NameLengths     = "lengths"
	NameHidden      = "hidden"
	NameAction      = "action"
	NameMeanAction  = "mean_action"
	NameQ           = "q"
	NameNextObsMean = "next_obs_mean"
	NameRewardMean  = "reward_mean"
	NameLogVar      = "logvar"
	NameAllMean     = "all_mean"
	NameHiddenOut   = "hidden_out"
	NameMean        = "mean"
	NameDropoutMask = "dropout_mask"
)
