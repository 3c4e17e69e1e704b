// Package admdev is the Any-step Dynamics Model's train step on a
// device.Device: the GRU unrolled over M steps, the head of ResBlocks with
// dropout, the Gaussian likelihood with soft-clamped log-variance and the
// bounds' penalty, the backward pass and Adam, all on the device. It does
// what one Run and Adam.Step of models' ADM training graph
// (models.NewADMTrainGraph) do, operation for operation:
//
//	h = GRU_L(…GRU_1(X)) over M time-major steps from a zero state
//	h = LayerNorm(h + mask ⊙ swish(h·W + b)) per ResBlock
//	[μ, raw] = h·W_out + b_out, lv = soft clamp of raw into [Min, Max]
//	loss = Σ w·Σ[(μ-y)²e^{-lv} + lv] / (d·Σw) + 0.01·ΣMax - 0.01·ΣMin
//
// Dropout masks are drawn on the device from the same counter-based stream
// as the CPU graph's (internal/cpukern.DropoutMask), so from the same seed
// both train with the same masks. A step is a fixed sequence of launches
// and products (LayerNorm's row sums and the bias gradients are products
// with a vector of ones) whose only per-step inputs, the batch, Adam's
// constants and the dropout states, are uploaded before it, so it can be
// recorded once as a device graph and replayed (Config.Graph). Weights and the Adam state load from and
// store to the host as plain slices in the training graph's parameter order
// (models.ADM.TrainedTensors gives them), so checkpoints stay
// interchangeable; like the other device packages this one does not link
// package models.
//
// Layouts are package models': row-major [rows, columns], W [in, out], and
// the M·Batch rows time-major (row t·Batch+b is step t of sequence b).
package admdev
