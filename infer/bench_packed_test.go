package infer_test

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// The packed ADM graph at hopper size, for the roll-out benchmarks.
var (
	packedOnce sync.Once
	packedADM  []byte
	packedErr  error
)

func openPacked(b *testing.B) func() (infer.Roller, error) {
	hopperModels(b)
	packedOnce.Do(func() {
		adm, err := hopperADMModel()
		if err != nil {
			packedErr = err
			return
		}
		packedADM, packedErr = onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMPacked}, nil)
	})
	if packedErr != nil {
		b.Fatal(packedErr)
	}
	return func() (infer.Roller, error) { return infer.OpenADMDirect(packedADM, infer.Options{}) }
}

// BenchmarkRolloutONPacked: ADMPO-ON style (no uncertainty), direct engine
// on the packed graph (each plan runs its own k GRU steps).
func BenchmarkRolloutONPacked(b *testing.B) { benchRollout(b, openPacked(b), 0) }

// BenchmarkRolloutOFFPacked: ADMPO-OFF style (U^ADM), direct engine on the
// packed graph.
func BenchmarkRolloutOFFPacked(b *testing.B) { benchRollout(b, openPacked(b), 1) }

// hopperADMModel rebuilds the ADM of hopperModels (the first draw from
// seed 1), so that the packed benchmarks run the same weights.
func hopperADMModel() (*models.ADM, error) {
	return models.NewADM(models.DefaultADMConfig(11, 3, 5), rand.New(rand.NewSource(1)))
}
