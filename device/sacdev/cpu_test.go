package sacdev_test

import (
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestUpdateMatchesCPU: on emu, three updates (actor every update and
// every second one) agree with sac.Agent within 1e-5, with no outliers.
func TestUpdateMatchesCPU(t *testing.T) {
	d := emu.New()
	defer d.Close()
	sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-5})
}
