package train

import "testing"

// TestScheduleMatchesPaper checks the schedule against values worked out by
// hand from MBPO's formula for the paper's hopper (0->50k, 1->15) and ant
// (10k->100k, 1->5) settings.
func TestScheduleMatchesPaper(t *testing.T) {
	hopper := Schedule{A: 0, B: 50000, From: 1, To: 15}
	ant := Schedule{A: 10000, B: 100000, From: 1, To: 5}
	cases := []struct {
		s    Schedule
		t    int
		want int
	}{
		{hopper, 0, 1}, {hopper, 3571, 1}, {hopper, 3572, 2}, // 1 + 3572/50000*14 = 2.00032
		{hopper, 25000, 8}, {hopper, 49999, 14}, {hopper, 50000, 15}, {hopper, 90000, 15},
		{ant, 0, 1}, {ant, 10000, 1}, {ant, 32499, 1}, {ant, 32500, 2}, {ant, 55000, 3},
		{ant, 100000, 5}, {ant, 300000, 5},
		{Schedule{A: 0, B: 0, From: 5, To: 5}, 0, 5},
	}
	for _, c := range cases {
		if got := c.s.At(c.t); got != c.want {
			t.Errorf("%v.At(%d) = %d, want %d", c.s, c.t, got, c.want)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	s, err := ParseSchedule("10000->100000:1->5")
	if err != nil || s != (Schedule{10000, 100000, 1, 5}) {
		t.Fatalf("got %v, %v", s, err)
	}
	for _, bad := range []string{"", "1-5", "0->10:0->5", "0->10:1"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted", bad)
		}
	}
}
