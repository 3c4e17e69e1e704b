// Package devicetest is the shared test suite of device.Device
// implementations: every kernel against a closed-form float64 reference,
// Gemm against a naive triple loop for all four transpose combinations, and
// the error paths. Only tests import it.
package devicetest
