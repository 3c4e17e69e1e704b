package rollout

import (
	"math"
	"testing"
)

// TestUADMClosedForm checks UADM on hand-computed cases.
func TestUADMClosedForm(t *testing.T) {
	cases := []struct {
		preds  []float32
		kn, od int
		want   float64
	}{
		{[]float32{1, 2, 3}, 1, 3, 0},
		// dims: var{0,2} = 1, var{0,4} = 4 -> sqrt(2.5)
		{[]float32{0, 0, 2, 4}, 2, 2, math.Sqrt(2.5)},
		// one dim, values 1, 2, 6: mean 3, var (4+1+9)/3
		{[]float32{1, 2, 6}, 3, 1, math.Sqrt(14.0 / 3)},
		{[]float32{5, -1, 5, -1, 5, -1}, 3, 2, 0},
	}
	for i, c := range cases {
		if got := UADM(c.preds, c.kn, c.od); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("case %d: UADM = %g, want %g", i, got, c.want)
		}
	}
}
