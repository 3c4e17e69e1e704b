// Package benchmarks measures admpo's hot paths and prints tables of ratios
// against a baseline run from the same command: the SAC update and the ADM
// train step against PyTorch on the same machine (Train), and roll-out
// throughput of the ADM-Roll engines against the machine's sgemm peak
// (Rollout).
package benchmarks
