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

// TestFitEnsembleOnDeviceMatchesCPU fits the same ensemble (four members of
// 32x32, weight decay, a last batch padded with weight 0) to the same data
// on the CPU graph and on the emulated device, with and without a device
// graph, for four epochs: every epoch's per-member train NLL and holdout
// MSE agree within 1e-5 relatively, the elites are the same, and so are
// the final weights (each within 1e-5 of its tensor's largest but for
// 0.1%, within two Adam steps per step: near-zero gradients summed in
// another order, see ensdevtest.Options.Outliers).
func TestFitEnsembleOnDeviceMatchesCPU(t *testing.T) {
	fit := func(dev, graph bool) (*models.Ensemble, EnsembleFitReport) {
		rng := rand.New(rand.NewSource(2))
		ls := newLinearSystem(1.02, rng)
		data := linearReplay(t, ls, 30, 25, rng) // 750 transitions: 600 train rows, the last batch of 24
		e := models.NewEnsemble(ls.obs, ls.act, 4, []int{32, 32}, rng)
		fc := DefaultEnsembleFitConfig()
		fc.Batch, fc.Elites, fc.MaxEpochs, fc.Patience = 64, 2, 4, 5
		fc.Decay = []float64{2.5e-5, 5e-5, 1e-4}
		if dev {
			d := emu.New()
			defer d.Close()
			fc.Device, fc.DeviceGraph = d, graph
		}
		rep, err := FitEnsemble(context.Background(), e, data, fc, rng)
		if err != nil {
			t.Fatal(err)
		}
		return e, rep
	}
	ec, rc := fit(false, false)
	for _, graph := range []bool{false, true} {
		ed, rd := fit(true, graph)
		if len(rd.History) != len(rc.History) {
			t.Fatalf("graph %v: %d epochs on the device, %d on the CPU", graph, len(rd.History), len(rc.History))
		}
		for k, hc := range rc.History {
			hd := rd.History[k]
			if hd.Steps != hc.Steps {
				t.Errorf("graph %v epoch %d: %d steps, CPU %d", graph, hc.Epoch, hd.Steps, hc.Steps)
			}
			for i := range hc.TrainNLL {
				for _, x := range []struct {
					what      string
					got, want float64
				}{{"train NLL", hd.TrainNLL[i], hc.TrainNLL[i]}, {"holdout MSE", hd.HoldoutMSE[i], hc.HoldoutMSE[i]}} {
					if !(math.Abs(x.got-x.want) <= 1e-5*math.Abs(x.want)) {
						t.Errorf("graph %v epoch %d member %d: %s %.9g, CPU %.9g", graph, hc.Epoch, i, x.what, x.got, x.want)
					}
				}
			}
		}
		if fmt.Sprint(rd.Elites) != fmt.Sprint(rc.Elites) {
			t.Errorf("graph %v: elites %v, CPU %v", graph, rd.Elites, rc.Elites)
		}
		want := ec.TrainedTensors()
		worst := 0.0
		for i, w := range ed.TrainedTensors() {
			worst = max(worst, devicetest.CloseTo(t, fmt.Sprintf("graph %v tensor %d", graph, i), w, want[i], 1e-5, 1e-3, 2*1e-3*40))
		}
		t.Logf("graph %v: epochs %d, train NLL %.6f (CPU %.6f), holdout MSE %.6f (CPU %.6f), largest weight difference %.3g",
			graph, len(rd.History), rd.TrainLoss, rc.TrainLoss, rd.HoldoutLoss, rc.HoldoutLoss, worst)
	}
}
