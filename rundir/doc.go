// Package rundir names the files of an admpo run directory and tells which
// kind of run a directory holds, so that training, export, evaluation,
// reports and the command line agree on one layout:
//
//	config.json        the resolved config (ConfigFile)
//	progress.csv       one row per log step (ProgressFile); progress.jsonl adds per-k errors and timing (ProgressJSONLFile)
//	offline.csv        an offline run's evaluations: D4RL normalised score, raw return and roll-out statistics (OfflineLogFile)
//	model_fit.csv      an offline run's model fit, one row per epoch: Adam steps, wall time, losses (ModelFitFile)
//	checkpoint.ckpt    the whole training state (CheckpointFile)
//	policy.onnx        the final policy (PolicyFile)
//	adm.onnx           the final ADM of an admpo run (ADMFile); ensemble.onnx for mbpo and mopo (EnsembleFile)
//	snapshots.json     a behaviour run's snapshot list, its ONNX files under snapshots/ (SnapshotsFile, SnapshotsDir)
//	builds.txt         the admpo builds that ran it, a line per start or resume (BuildsFile, Dir.AppendBuild, Dir.Builds)
//
// It imports nothing of admpo: the runtime packages may use it.
package rundir
