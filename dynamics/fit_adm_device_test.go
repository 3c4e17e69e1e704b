package dynamics

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/models"
)

// TestFitADMOnDeviceMatchesCPU fits the same ADM to the same data on the
// CPU graph and on the emulated device, with and without a device graph
// (three epochs of 20 steps, dropout on): every epoch's train NLL and holdout MSE agree within 1e-5
// relatively, and so do the final weights (each within 1e-5 of its tensor's
// largest but for 0.1%, within two Adam steps per step: near-zero
// gradients, see admdevtest.Options.Outliers).
func TestFitADMOnDeviceMatchesCPU(t *testing.T) {
	fit := func(dev, graph bool) (*models.ADM, ADMFitReport) {
		rng := rand.New(rand.NewSource(admTestSeed))
		ls := newLinearSystemAngle(admTestGain, admTestAngle, rng)
		data := linearReplay(t, ls, 40, admTestLen, rng)
		cfg := models.ADMConfig{ObsDim: ls.obs, ActDim: ls.act, Hidden: 24, Layers: 2, ResBlocks: 2, M: 4}
		m, err := models.NewADM(cfg, rng)
		if err != nil {
			t.Fatal(err)
		}
		fc := DefaultADMFitConfig()
		fc.Batch, fc.LR, fc.MaxEpochs, fc.MaxSteps, fc.MaxHoldout, fc.TrainEval = 32, 2e-3, 3, 20, 200, 0
		if dev {
			d := emu.New()
			defer d.Close()
			fc.Device, fc.DeviceGraph = d, graph
		}
		rep, err := FitADM(context.Background(), m, data, fc, rng)
		if err != nil {
			t.Fatal(err)
		}
		return m, rep
	}
	mc, rc := fit(false, false)
	for _, graph := range []bool{false, true} {
		md, rd := fit(true, graph)
		compareFits(t, graph, mc, rc, md, rd)
	}
}

// compareFits is TestFitADMOnDeviceMatchesCPU's comparison of a device fit
// (md, rd) with the CPU's (mc, rc).
func compareFits(t *testing.T, graph bool, mc *models.ADM, rc ADMFitReport, md *models.ADM, rd ADMFitReport) {
	t.Helper()
	if len(rc.History) != len(rd.History) {
		t.Fatalf("%d epochs on the device, %d on the CPU", len(rd.History), len(rc.History))
	}
	for i, ec := range rc.History {
		ed := rd.History[i]
		for _, x := range []struct {
			what      string
			got, want float64
		}{{"train NLL", ed.TrainNLL, ec.TrainNLL}, {"holdout MSE", ed.HoldoutMSE, ec.HoldoutMSE}, {"holdout NLL", ed.HoldoutNLL, ec.HoldoutNLL}} {
			if math.Abs(x.got-x.want) > 1e-5*math.Abs(x.want) {
				t.Errorf("epoch %d %s %.9g, CPU %.9g", ec.Epoch, x.what, x.got, x.want)
			}
		}
		if ed.Steps != ec.Steps {
			t.Errorf("epoch %d: %d steps, CPU %d", ec.Epoch, ed.Steps, ec.Steps)
		}
	}
	want := mc.TrainedTensors()
	for i, w := range md.TrainedTensors() {
		devicetest.CloseTo(t, fmt.Sprintf("tensor %d", i), w, want[i], 1e-5, 1e-3, 2*2e-3*60)
	}
	t.Logf("graph %v: epochs %d, train NLL %.6f (CPU %.6f), holdout MSE %.6f (CPU %.6f)", graph, len(rd.History),
		rd.TrainLoss, rc.TrainLoss, rd.HoldoutLoss, rc.HoldoutLoss)
}
