// Package buffer holds admpo's transition stores: Replay, a fixed-capacity
// ring buffer of transitions kept in insertion order, with uniform batch
// sampling (Batch), episode-bounded sequence sampling for training an
// any-step model (SeqBatch), roll-out start windows for model roll-outs
// (infer.Start), data sets loaded as buffers (FromDataset) and the buffer's
// checkpoint sections (Save, Load).
//
// The checkpoint layout is part of admpo's run format: old checkpoints must
// keep loading, so section names and their contents do not change.
package buffer
