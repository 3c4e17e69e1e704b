// Package train holds admpo's training loops: the online loop (ADMPO-ON,
// MBPO, SAC) and the offline loop (ADMPO-OFF, MOPO, BC) with their configs
// (built on the parts both share: ModelSettings, RuntimeSettings) and
// presets, run directories, checkpoints, progress logs and bundle
// export. The replay buffer lives in package buffer, the policy updates in
// package sac and the dynamics models and their fits in package dynamics;
// none of them imports train. Data collection and the behaviour runs
// (package collect) and the offline diagnosis (package experiments) sit on
// top of train; train imports neither.
package train
