package schema_test

import (
	"slices"
	"testing"

	"github.com/admpo/admpo/onnx/schema"
)

// TestSignaturesAreFresh: a caller that changes a returned Signature does
// not change the next one.
func TestSignaturesAreFresh(t *testing.T) {
	a := schema.Actor()
	a.Inputs[0] = "changed"
	if got := schema.Actor().Inputs; !slices.Equal(got, []string{"obs", "noise"}) {
		t.Fatalf("Actor().Inputs = %v after a caller's change", got)
	}
}

// TestSignatureNamesAreDistinct: no graph names a tensor twice.
func TestSignatureNamesAreDistinct(t *testing.T) {
	for kind, s := range map[string]schema.Signature{
		schema.KindActor: schema.Actor(), schema.KindCritic: schema.Critic(), schema.KindADM: schema.ADM(),
		schema.KindADMStep: schema.ADMStep(), schema.KindEnsemble: schema.Ensemble(),
	} {
		all := append(append([]string{}, s.Inputs...), s.Outputs...)
		seen := map[string]bool{}
		for _, n := range all {
			if seen[n] {
				t.Errorf("%s names %q twice", kind, n)
			}
			seen[n] = true
		}
	}
}

func TestFloatsRoundTrip(t *testing.T) {
	v := []float32{1, -0.1, 3.4028235e38, 1e-45, 0.3333333}
	s := schema.JoinFloats(v)
	got, err := schema.ParseFloats(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Errorf("%d: %v -> %q -> %v", i, v[i], s, got[i])
		}
	}
	if _, err := schema.ParseFloats("1,x"); err == nil {
		t.Error("ParseFloats accepted 1,x")
	}
}
