// Package rolldev runs the Any-step Dynamics Model's inference for ADM-Roll
// on a device.Device (issue 33, docs/device-rollout-plan.md): the roll-out
// kernels of device/kernels/roll.cu between cuBLAS-style products.
//
// Direct evaluates k-step plans as infer.ADMDirect does with the packed ONNX
// graph (onnx.ADMPacked): each plan runs its own k GRU steps from its start
// state, then the head of ResBlocks and the output layer once. The host
// sorts the plans by k, longest first (a stable counting sort), so the
// plans still running at GRU step j are a prefix whose length the host
// knows: every product and launch is sized without a device sync.
// Activations are feature-major ((plan r, unit c) at c·n + r), so a prefix
// of plans is the same buffer with fewer rows. MC dropout's keep flags are
// generated in the ResBlock kernel from infer's keys (seed, roll-out step,
// start row, k), as infer.DropoutKeep defines them.
//
// Engine is the roll-out on top of Direct (infer.ADMDirect.Rollout's
// semantics): the window of each chunk's rows stays on the device; per
// step the host draws the policy's noise, each row's k and the sample's
// Gaussian draws in infer's order and uploads them, and the device runs
// the actor (nn.Forward and sac_head), the plans' forward, roll_finish
// (sample, U^ADM, penalty), roll_done (finiteness, a host Done's verdict,
// a DoneSpec) and roll_push (the window's shift). Each step's transitions
// and done flags are downloaded; ended rows leave the window by
// compaction (gather_rows).
//
// Engine.Mode chooses how a step evaluates the plans: ModeDirect runs each
// plan's GRU from its start state (the drawn k's plans, or every k for
// U^ADM); ModeIncremental (infer.ADMIncremental's semantics) keeps the GRU
// states of every window slot on the device, packed by the step's plans
// and ping-ponged between two buffers, and advances each plan by one GRU
// step a roll-out step: a chunk's start windows are replayed first by
// Direct's GRU without heads, a step gathers each plan's cached states
// (roll_gather_cols; the current state's slot is the zero state), and a
// full window's shift and the new state's zero slot are the host's column
// map. ModeAuto (the default) picks direct without U^ADM and incremental
// with it, as admpo train does.
//
// Weights load from the host as plain slices in the order of models'
// ADM training graph (models.ADM.TrainedTensors, admdev.Sizes); like the
// other device packages this one links neither models nor infer, onnx or
// ONNX Runtime. Package rolldevtest holds its tests against both.
package rolldev
