package bitexact

import (
	"math"
	"testing"
)

func TestDiff(t *testing.T) {
	nan := float32(math.NaN())
	otherNaN := math.Float32frombits(math.Float32bits(nan) ^ 1)
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct {
		name string
		a, b []float32
		want int
	}{
		{"equal", []float32{1, 2, 3}, []float32{1, 2, 3}, -1},
		{"both empty", nil, []float32{}, -1},
		{"value", []float32{1, 2, 3}, []float32{1, 2.5, 3}, 1},
		{"last ulp", []float32{1}, []float32{math.Nextafter32(1, 2)}, 0},
		{"same NaN", []float32{0, nan}, []float32{0, nan}, -1},
		{"NaN vs number", []float32{nan}, []float32{0}, 0},
		{"other NaN bits", []float32{nan}, []float32{otherNaN}, 0},
		{"zero vs -zero", []float32{0}, []float32{negZero}, 0},
		{"prefix", []float32{1, 2}, []float32{1, 2, 3}, 2},
		{"longer", []float32{1, 2, 3}, []float32{1}, 1},
	} {
		if got := Diff(c.a, c.b); got != c.want {
			t.Errorf("%s: Diff = %d, want %d", c.name, got, c.want)
		}
		if Equal(c.a, c.b) != (c.want < 0) {
			t.Errorf("%s: Equal = %v", c.name, !(c.want < 0))
		}
	}
}
