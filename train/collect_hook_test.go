package train_test

import (
	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/train"
)

// init hands train's own tests the data collector (see CollectForTest).
func init() {
	train.CollectForTest = func(task string, n int, seed int64, act envs.Actor) (*datasets.Dataset, error) {
		d, _, err := collect.Dataset(task, n, seed, 0, collect.SharedActor(act))
		return d, err
	}
}
