package train

import "fmt"

// Schedule is MBPO's linear roll-out length schedule: the length is From
// until step A, rises linearly to To at step B, and stays there (the
// paper's "a->b, x->y"). Lengths are floored to integers. The online loop
// reads it at the learning step (OnlineConfig.ScheduleStep). Its JSON keys
// are a, b, from, to (version 1 configs wrote A, B, From, To, which
// encoding/json matches case-insensitively).
type Schedule struct {
	A    int `json:"a"`    // step where the length starts to rise
	B    int `json:"b"`    // step where it reaches To
	From int `json:"from"` // roll-out length up to A
	To   int `json:"to"`   // roll-out length from B on
}

// At returns the roll-out length at env step t:
//
//	From + clamp((t-A)/(B-A), 0, 1) * (To-From), floored.
func (s Schedule) At(t int) int {
	if s.B <= s.A {
		if t >= s.B {
			return s.To
		}
		return s.From
	}
	dx := float64(t-s.A) / float64(s.B-s.A)
	dx = max(0, min(1, dx))
	return int(float64(s.From) + dx*float64(s.To-s.From))
}

// Validate checks that the schedule is usable.
func (s Schedule) Validate() error {
	if s.From < 1 || s.To < 1 || s.A < 0 || s.B < 0 {
		return fmt.Errorf("train: roll-out schedule %d->%d steps, length %d->%d: lengths must be >= 1 and steps >= 0", s.A, s.B, s.From, s.To)
	}
	return nil
}

// String formats the schedule as "a->b:x->y".
func (s Schedule) String() string { return fmt.Sprintf("%d->%d:%d->%d", s.A, s.B, s.From, s.To) }

// ParseSchedule reads "a->b:x->y" (e.g. "0->50000:1->15").
func ParseSchedule(v string) (Schedule, error) {
	var s Schedule
	if _, err := fmt.Sscanf(v, "%d->%d:%d->%d", &s.A, &s.B, &s.From, &s.To); err != nil {
		return s, fmt.Errorf("train: roll-out schedule %q: want a->b:x->y, e.g. 0->50000:1->15", v)
	}
	return s, s.Validate()
}
