package scratch

import "testing"

// TestResize: a slice whose capacity holds n is resliced in place; a
// shorter one is replaced by a zeroed slice of length n.
func TestResize(t *testing.T) {
	s := make([]float32, 2, 8)
	s[0] = 7
	r := Resize(s, 5)
	if len(r) != 5 || &r[0] != &s[0] || r[0] != 7 {
		t.Fatalf("Resize within capacity: len %d, same storage %v, r[0] %g", len(r), &r[0] == &s[0], r[0])
	}
	g := Resize(s, 9)
	if len(g) != 9 || &g[0] == &s[0] || g[0] != 0 {
		t.Fatalf("Resize past capacity: len %d, same storage %v, g[0] %g", len(g), &g[0] == &s[0], g[0])
	}
	if r := Resize([]int32(nil), 0); len(r) != 0 {
		t.Fatalf("Resize(nil, 0) has length %d", len(r))
	}
}
