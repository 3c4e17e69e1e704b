// Package testfix holds test fixtures shared by the tests of infer, onnx,
// policies, serve and evaluate: the float64 reference of every network
// (forward passes written from the equations in models/weights.go, sharing
// no code with models/forward.go or the ONNX exporter) to check exported and
// Go-run networks against, random observations and the largest difference
// of two results; the float64 reference roll-out (RefRollout, with ADM-Roll,
// MC dropout and ensemble models and any policy function, e.g. ActorPolicy)
// that roll-out engines are compared with (DiffTransitions); the U^ADM of a
// history that the monitors are checked against (over the models package's
// own ADM forward pass); a finished run's final policy, opened for the tests
// of train and experiments; and a harness that runs test work on many
// goroutines at once. Only tests import it.
package testfix
