// Package ensdev is MBPO's probabilistic ensemble's train step on a
// device.Device: every member's swish MLP, the Gaussian head with
// soft-clamped log-variance, the bounds' penalty, the per-layer weight
// decay, the backward pass and Adam, all on the device. It does what one
// Run and Adam.Step of models' ensemble training graph
// (models.NewEnsembleTrainGraph) do, for every member:
//
//	h = swish(h·W_l + b_l) for the hidden layers, [μ, raw] = h·W_out + b_out
//	lv = soft clamp of raw into [Min, Max]
//	loss = Σ_i [Σ w·Σ[(μ-y)²e^{-lv} + lv] / (d·Σw) + 0.01·ΣMax_i - 0.01·ΣMin_i] + Σ_i Σ_l 0.5·wd_l·ΣW_il²
//
// The members run together, not one after another: each tensor every
// member has (a layer's weights and their gradient and Adam moments, a
// layer's activations, the inputs) is one buffer holding all members'
// in turn, so each layer's forward, weight-gradient and input-gradient
// product and each bias sum is one device.GemmStridedBatched over the
// members, and the element-wise work one launch over all of them: the
// hidden layers' swish (ens_swish, adm_swish_res's math without residual
// and dropout) and its gradient (ens_swish_grad), the output bias
// (ens_bias_add), the head and the loss (ens_head, ens_loss: the ADM's
// adm_head and adm_loss with each member's bounds and Σw), the weight
// decay and Adam. At MBPO's size (seven 4x200 members) a step is 21
// batched products and 31 kernel launches, whatever the number of
// members (member by member it was 147 products and 217 launches;
// TestLaunchesPerStep). No GPU timing of it yet.
//
// A step is a fixed sequence of launches and products whose per-step
// inputs, the batches and Adam's constants, are uploaded before it, so it
// can be recorded once as a device graph and replayed (Config.Graph). Each member's NLL is summed
// on the device over the steps (NLLSums), so a fit reads its epoch's train
// NLL back once. Weights and the Adam state load from and store to the host
// as plain slices in the training graph's parameter order (Config.Sizes),
// so checkpoints stay interchangeable; like the other device packages this
// one does not link package models.
//
// Layouts are package models': row-major [rows, columns], W [in, out];
// on the device member i's block of a stacked buffer starts at i times
// one member's size.
package ensdev
