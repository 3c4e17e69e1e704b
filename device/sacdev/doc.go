// Package sacdev is Soft Actor-Critic's learner on a device.Device: the
// tanh-Gaussian actor, twin critics, their Polyak targets, log α and the
// three Adam states stay on the device, and one Update is a fixed sequence
// of kernel launches and matrix products over a batch (and its Gaussian
// noise) uploaded once, with no copy back to the host; Stats reads the
// losses back when asked (the last actor step's actor loss and mean logπ
// are summed on the device when it runs, so that Stats after updates that
// skipped the actor still has them).
//
// Update does what package sac's Agent.update does, in its order and with
// its arithmetic (models' SAC graphs and models.Adam):
//
//	a', logπ' = actor(s', ε')          y = r + γ(1-d)·(min(Q1'(s',a'), Q2'(s',a')) - α·logπ')
//	critics  ← Adam on mean((Q1(s,a)-y)²) + mean((Q2(s,a)-y)²)
//	ã, logπ  = actor(s, ε)             actor ← Adam on mean(α·logπ - min(Q1(s,ã), Q2(s,ã)))
//	log α    ← Adam on -mean(log α·(logπ + H))
//	Q'       ← τ·Q + (1-τ)·Q'
//
// with α the value from before the update in every loss, the actor step
// seeing the critics just updated, and the actor and α stepped every
// ActorEvery updates. A batch comes from the host (Upload) or is gathered
// on the device by index from a Replay (Sample), which uploads only the
// indices and the noise. Layouts are package models': batches row-major
// [batch, features], W row-major [in, out], the actor's output [mean,
// raw log-std] and the critics' input [obs, act].
//
// Each update's Adam constants (the bias corrections of its step counts and
// the learning rates) are uploaded before its work is queued, and the Adam
// kernel reads them from the device, so the queued work is the same every
// update. With Config.Graph the learner records it once as a device graph
// (device.Capturer: a CUDA graph on cuda) and replays it, one launch per
// update instead of about 140.
//
// BC is behaviour cloning of the same actor network on a device (package
// sac's BC: the mean squared error of the deterministic action, Adam), for
// offline runs with --algo bc.
package sacdev
