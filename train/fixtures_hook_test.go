package train_test

import (
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// init hands train's own tests internal/trainfix's fixtures (see Fixtures).
func init() {
	train.Fixtures.RandomHopperFile = trainfix.RandomHopperFile
	train.Fixtures.TinyOfflineConfig = trainfix.TinyOfflineConfig
	train.Fixtures.RunOfflineToEnd = trainfix.RunOfflineToEnd
}
