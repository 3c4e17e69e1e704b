// Package collect makes the offline data sets: it runs episodes of an
// environment (a built-in task, a task file's, or a remote one: OpenEnv)
// with a policy (uniform random, or an exported ONNX actor on one worker
// each) and returns them in D4RL's layout (Dataset, Concat), trains the SAC
// behaviour runs whose snapshots become the medium and expert policies
// (TrainBehaviour), and keeps the shipped behaviour policies and their
// manifest (ReadManifest, Promote).
//
// Collection sits on top of training: TrainBehaviour drives train.Online,
// so collect imports train and train never imports collect.
package collect
