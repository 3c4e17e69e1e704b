package main

import (
	"errors"
	"testing"
)

// TestExperimentUsageErrors checks, in process, that malformed experiment
// invocations are usage errors (exit code 2) before any work starts.
func TestExperimentUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nonsense"},
		{"compounding-error"},                 // no --dataset
		{"uncertainty", "--starts", "5"},      // no --dataset
		{"m-sweep", "--dataset", ""},          // empty --dataset
		{"compounding-error", "--bogus-flag"}, // unknown flag
		{"compounding-error", "--dataset", "x", "y"}, // stray argument
	} {
		err := runExperiment(args)
		if !errors.Is(err, errUsage) {
			t.Errorf("admpo experiment %q: error %v, want a usage error", args, err)
		}
		if exitCode(err) != 2 {
			t.Errorf("admpo experiment %q: exit code %d, want 2", args, exitCode(err))
		}
	}
	b := addBudgetFlags(newFlags("x"))
	*b.elites = *b.members + 1
	if _, err := b.budget(0); !errors.Is(err, errUsage) {
		t.Errorf("more elites than members: %v, want a usage error", err)
	}
}
