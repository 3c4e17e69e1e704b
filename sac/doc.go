// Package sac holds admpo's policy updates: Soft Actor-Critic (Agent, with
// its hyper-parameters in Config and the last update's Stats, LastStats,
// which a device Learner reads back only when asked) and behaviour
// cloning of its actor (BC, whose steps a device BCLearner may run), their
// checkpoint sections (sac/..., bc/...)
// and a timing benchmark of one update (BenchUpdate). Both train on
// buffer.Batch rows; the training loops in package train drive them.
//
// The checkpoint sections are part of admpo's run format: old checkpoints
// must keep loading, so their names and contents do not change.
package sac
