// Package rollout holds what a model roll-out's engines share and a device
// engine needs as data rather than Go code. For now that is DoneSpec, a
// termination rule on observations written as ranges, which a device kernel
// can evaluate and whose Eval is the Go reference (envs.Task.DoneSpec holds
// the built-in tasks'). docs/device-rollout-plan.md (S1, S2) plans the rest.
package rollout
