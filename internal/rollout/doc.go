// Package rollout holds what a model roll-out's engines share, so that
// infer's ONNX Runtime engines and a device engine (device/rolldev) agree
// on it without importing each other: the batch types Start, Transitions
// and RollConfig (infer aliases them); U^ADM (UADM); MC dropout's keyed keep
// flags (DropoutKeep, from DropoutBase and DropThreshold); and DoneSpec, a
// termination rule on observations written as ranges, which a device kernel
// can evaluate and whose Eval is the Go reference (envs.Task.DoneSpec holds
// the built-in tasks'). The roll-out loops stay with their engines.
// docs/device-rollout-plan.md plans the rest.
package rollout
