package rollout

import (
	"math"
	"strings"
	"testing"
)

func TestDoneSpecEval(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	s := DoneSpec{Ranges: []Range{
		{Dim: 0, Lo: 1, HasLo: true},                                                 // 1 < o0
		{Dim: 1, Abs: true, Hi: 2, HasHi: true, HiIncl: true},                        // |o1| <= 2
		{Dim: 2, ToEnd: true, Lo: -5, Hi: 5, HasLo: true, HasHi: true, LoIncl: true}, // -5 <= o[2:] < 5
	}}
	if err := s.Validate(4); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    []float32
		done bool
	}{
		{[]float32{1.5, 0, 0, 0}, false},
		{[]float32{1, 0, 0, 0}, true},
		{[]float32{1.5, 2, 0, 0}, false},
		{[]float32{1.5, -2, 0, 0}, false},
		{[]float32{1.5, -2.5, 0, 0}, true},
		{[]float32{1.5, 0, -5, 0}, false},
		{[]float32{1.5, 0, 0, 5}, true},
		{[]float32{1.5, 0, 0, nan}, true},
		{[]float32{nan, 0, 0, 0}, true},
		{[]float32{inf, 0, 0, 0}, false}, // no upper bound, no Finite
		{[]float32{inf, 0, 0, inf}, true},
		{[]float32{1.5, -inf, 0, 0}, true},
	} {
		if got := s.Eval(c.o); got != c.done {
			t.Errorf("Eval(%v) = %v, want %v", c.o, got, c.done)
		}
	}
	s.Finite = true
	if !s.Eval([]float32{inf, 0, 0, 0}) {
		t.Error("Finite: +Inf did not end the row")
	}
	var never DoneSpec
	if !never.Never() || never.Eval([]float32{nan, inf}) || s.Never() {
		t.Error("the zero spec must never end a row, and only it is Never")
	}
	if err := never.Validate(3); err != nil {
		t.Error(err)
	}
}

func TestDoneSpecValidate(t *testing.T) {
	for _, c := range []struct {
		s    DoneSpec
		dim  int
		want string
	}{
		{DoneSpec{}, 0, "observation size 0"},
		{DoneSpec{Ranges: []Range{{Dim: 3, HasLo: true}}}, 3, "range 0: dimension 3 is outside [0, 3)"},
		{DoneSpec{Ranges: []Range{{Dim: -1, HasLo: true}}}, 3, "dimension -1 is outside"},
		{DoneSpec{Ranges: []Range{{Dim: 0, HasLo: true}, {Dim: 1}}}, 3, "range 1 (dimension 1): no bound"},
		{DoneSpec{Ranges: []Range{{Dim: 2, Hi: float32(math.NaN()), HasHi: true}}}, 3, "range 0 (dimension 2): a bound is NaN"},
	} {
		err := c.s.Validate(c.dim)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v, %d) = %v, want %q", c.s, c.dim, err, c.want)
		}
	}
}
