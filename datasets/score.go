package datasets

import (
	"fmt"
	"sort"
	"strings"
)

// refScores are D4RL's reference returns (random policy, expert policy).
var refScores = map[string][2]float64{
	"hopper":      {-20.272305, 3234.3},
	"halfcheetah": {-280.178953, 12135.0},
	"walker2d":    {1.629008, 4592.3},
	"ant":         {-325.6, 3879.7},
}

// RefScores returns D4RL's random and expert reference returns for a task.
// The task may be a bare name ("hopper") or a data set or environment name
// whose part before the first '-' is one ("hopper-medium-v2", "Hopper-v4").
func RefScores(task string) (min, max float64, err error) {
	key := strings.ToLower(strings.TrimSpace(task))
	if i := strings.IndexByte(key, '-'); i >= 0 {
		key = key[:i]
	}
	key = strings.ReplaceAll(key, "_", "")
	r, ok := refScores[key]
	if !ok {
		names := make([]string, 0, len(refScores))
		for k := range refScores {
			names = append(names, k)
		}
		sort.Strings(names)
		return 0, 0, fmt.Errorf("datasets: no D4RL reference scores for task %q (known: %s)", task, strings.Join(names, ", "))
	}
	return r[0], r[1], nil
}

// NormalizedScore returns D4RL's normalised score of an episode return:
// 100 * (ret - random) / (expert - random).
func NormalizedScore(task string, ret float64) (float64, error) {
	lo, hi, err := RefScores(task)
	if err != nil {
		return 0, err
	}
	return 100 * (ret - lo) / (hi - lo), nil
}
