// Package evaluate plays a deployed policy bundle in its task: episodes on
// a MuJoCo task (package envs) with the actor on either runtime, their
// returns and, for tasks with D4RL reference scores, normalised scores. It
// sits above policies (which links no simulator) and links no training
// code.
package evaluate
