package bitexact

import (
	"math"
	"testing"
)

// Diff returns the first index at which a and b hold different bits, or
// -1 when they are equal (lengths included); where one is a prefix of the
// other, the shorter one's length.
func Diff(a, b []float32) int {
	for i := range min(len(a), len(b)) {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Equal reports whether a and b hold the same values bit for bit.
func Equal(a, b []float32) bool { return Diff(a, b) < 0 }

// Same fails t unless got holds want's values bit for bit; name says what
// is compared.
func Same(t testing.TB, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	if i := Diff(got, want); i >= 0 {
		t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
	}
}
