//go:build admpo_cuda

package cudaep

// Test hooks for cudaep_test.
var (
	ConfigEntry = configEntry
	SameEnv     = sameEnv
)
