// Package testfix holds test fixtures shared by the runtime packages'
// tests (infer, policies, policies/goruntime, serve, evaluate): an
// independent float64 forward pass of a models.Actor to check the exported
// actor against, random observations and the largest difference of two
// results. Only tests import it.
package testfix
