// Package train holds admpo's training loops: the online loop (ADMPO-ON,
// MBPO, SAC) and the offline loop (ADMPO-OFF, MOPO, BC) with their configs
// and presets, the dynamics models and their fitting, data collection, run
// directories, checkpoints, progress logs and bundle export. The replay
// buffer lives in package buffer and the policy updates in package sac;
// neither imports train.
package train
