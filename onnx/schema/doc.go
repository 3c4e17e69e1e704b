// Package schema is the contract between admpo's ONNX exporter (package
// onnx) and its runtimes (infer, policies, serve): the tensor names of the
// exported graphs, their order for each model kind, the metadata keys, the
// model kind values and the format of the float-list metadata values
// (JoinFloats, ParseFloats). It imports nothing of admpo, so the runtime
// packages share these names without linking the exporter (which links the
// training networks).
//
// Every graph uses a symbolic first dimension "batch":
//
//	actor:    obs [batch, obs_dim], noise [batch, act_dim]
//	          -> action [batch, act_dim] = scale·tanh(mean + exp(logstd)·noise) + bias,
//	             mean_action [batch, act_dim] = scale·tanh(mean) + bias
//	critic:   obs [batch, obs_dim], act [batch, act_dim] -> q [batch, 1]
//	ADM:      obs [batch, obs_dim] (start state), actions [m, batch, act_dim]
//	          (sequence-first), lengths int32 [batch] (k per row, clamped to 1..m)
//	          -> next_obs_mean [batch, obs_dim] = obs + mean delta after k steps,
//	             reward_mean [batch, 1], logvar [batch, obs_dim+1] (soft-clamped),
//	             and with all_steps=true all_mean [m, batch, obs_dim+1]:
//	             the mean of [delta, reward] after every step j = 1..m.
//	ADM step: hidden [layers, batch, hidden], obs [batch, obs_dim] (start state),
//	          act [batch, act_dim] -> hidden_out [layers, batch, hidden],
//	          next_obs_mean, reward_mean, logvar as above for the step just taken.
//	          With MC dropout (metadata dropout = p) both ADM graphs also take
//	          dropout_mask [res_blocks, batch, hidden]: keep flags (1 or 0) of
//	          each row's ResBlock units, scaled by 1/(1-p) inside the graph.
//	ensemble: obs [batch, obs_dim], act [batch, act_dim]
//	          -> mean [members, batch, obs_dim+1] (of [delta, reward]),
//	             logvar [members, batch, obs_dim+1] (soft-clamped).
//
// A behaviour-cloning policy is exported as an actor.
package schema
