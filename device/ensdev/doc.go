// Package ensdev is MBPO's probabilistic ensemble's train step on a
// device.Device: every member's swish MLP, the Gaussian head with
// soft-clamped log-variance, the bounds' penalty, the per-layer weight
// decay, the backward pass and Adam, all on the device. It does what one
// Run and Adam.Step of models' ensemble training graph
// (models.NewEnsembleTrainGraph) do, member by member:
//
//	h = swish(h·W_l + b_l) for the hidden layers, [μ, raw] = h·W_out + b_out
//	lv = soft clamp of raw into [Min, Max]
//	loss = Σ_i [Σ w·Σ[(μ-y)²e^{-lv} + lv] / (d·Σw) + 0.01·ΣMax_i - 0.01·ΣMin_i] + Σ_i Σ_l 0.5·wd_l·ΣW_il²
//
// The head and the loss are the ADM's kernels (adm_head, adm_loss), a
// hidden layer's forward pass is adm_swish_res without residual and
// dropout, its backward pass ens_swish_grad. A step is a fixed sequence of
// launches and products whose per-step inputs, the batches and Adam's
// constants, are uploaded before it, so it can be recorded once as a
// device graph and replayed (Config.Graph). Each member's NLL is summed
// on the device over the steps (NLLSums), so a fit reads its epoch's train
// NLL back once. Weights and the Adam state load from and store to the host
// as plain slices in the training graph's parameter order (Config.Sizes),
// so checkpoints stay interchangeable; like the other device packages this
// one does not link package models.
//
// Layouts are package models': row-major [rows, columns], W [in, out].
package ensdev
