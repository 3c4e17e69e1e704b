package datasets

import (
	"math"
	"testing"
)

// TestNormalizedScore compares against values worked out by hand with bc:
// 100*(R-min)/(max-min) with D4RL's reference returns.
func TestNormalizedScore(t *testing.T) {
	cases := []struct {
		task string
		ret  float64
		want float64
	}{
		{"hopper", 3234.3, 100},
		{"hopper", -20.272305, 0},
		{"hopper", 1607.0138475, 50}, // midpoint
		{"halfcheetah", 5000, 42.530026937099},
		{"walker2d", 1000, 21.747822785379},
		{"ant", 0, 7.742610515302},
		{"hopper-medium-v2", 3234.3, 100}, // data set name
		{"HalfCheetah-v4", 5000, 42.530026937099},
		{"half_cheetah", 5000, 42.530026937099},
		{"Walker2d-medium-replay-v2", 1000, 21.747822785379},
	}
	for _, c := range cases {
		got, err := NormalizedScore(c.task, c.ret)
		if err != nil {
			t.Fatalf("%s: %v", c.task, err)
		}
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("NormalizedScore(%q, %v) = %.12f, want %.12f", c.task, c.ret, got, c.want)
		}
	}
}

func TestNormalizedScoreUnknownTask(t *testing.T) {
	_, err := NormalizedScore("humanoid", 1)
	wantErr(t, err, `"humanoid"`, "ant, halfcheetah, hopper, walker2d")
}
