// Package bitexact compares float32 slices bit for bit, for the tests that
// demand identical results (round trips, resumed runs, checkpoints): a NaN
// equals a NaN of the same bits, and 0 and -0 differ. It imports nothing of
// admpo's (no Gorgonia, unlike internal/testfix), so any package's tests can
// use it. Only tests import it.
package bitexact
