package nn_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/nn"
	"github.com/admpo/admpo/models"
)

// TestCriticStepMatchesCPU compares nn.MLP on emu with admpo's CPU path for
// SAC's critic: models.SACCriticGraph (Gorgonia + OpenBLAS) and models.Adam,
// hopper's shapes (11 + 3 inputs, 256x256, batch 256). Every step starts
// from identical weights and Adam moments (the device's, copied into the
// models' slices): the forward Q values, the loss and the gradients of the
// first critic must agree within 1e-5 of each tensor's largest value, and
// models.Adam stepped with the device's gradients must give the device's
// weights and moments bit for bit (the adam kernel does models.Adam's
// float32 arithmetic; emu compiles it without fused multiply-adds, like Go
// on amd64). This also pins the layouts:
// models' W [in, out] row-major and the concatenated [obs, act] input.
func TestCriticStepMatchesCPU(t *testing.T) {
	const obsDim, actDim, batch, lr, tol = 11, 3, 256, 3e-4, 1e-5
	rng := rand.New(rand.NewSource(5))
	c1 := models.NewCritic(obsDim, actDim, []int{256, 256}, rng)
	c2 := models.NewCritic(obsDim, actDim, []int{256, 256}, rng)
	cg, err := models.NewSACCriticGraph(c1, c2, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	cpuParams := func() [][]float32 { // the models' slices of critic 1, in place
		var ps [][]float32
		for i := range c1.Net.Layers {
			ps = append(ps, c1.Net.Layers[i].W, c1.Net.Layers[i].B)
		}
		return ps
	}

	d := emu.New()
	defer d.Close()
	net, err := nn.NewMLP(d, []int{obsDim + actDim, 256, 256, 1}, batch, lr)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Upload(net.Params(), cpuParams()); err != nil {
		t.Fatal(err)
	}
	xb, _ := d.Alloc(device.Float32, batch*(obsDim+actDim))
	yb, _ := d.Alloc(device.Float32, batch)
	ms, vs := net.Moments()
	adam := models.NewAdamSlices(make([][]float32, 6), lr)
	for step := 1; step <= 3; step++ {
		obs, act, target := normal(rng, batch*obsDim), normal(rng, batch*actDim), normal(rng, batch)
		x := make([]float32, 0, batch*(obsDim+actDim))
		for r := range batch {
			x = append(append(x, obs[r*obsDim:(r+1)*obsDim]...), act[r*actDim:(r+1)*actDim]...)
		}
		for _, err := range []error{cg.Obs.Set(obs), cg.Act.Set(act), cg.Target.Set(target), d.Upload(xb, x), d.Upload(yb, target)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		// The device's state, copied into the CPU critic.
		p0, m0, v0 := download(t, net, net.Params()), download(t, net, ms), download(t, net, vs)
		for i, p := range cpuParams() {
			copy(p, p0[i])
		}
		_, q1, _, err := cg.Run()
		if err != nil {
			t.Fatal(err)
		}
		pred, err := net.Forward(xb)
		if err != nil {
			t.Fatal(err)
		}
		q := make([]float32, batch)
		if err := d.Download(q, pred); err != nil {
			t.Fatal(err)
		}
		devicetest.CloseTo(t, "Q1", q, q1, tol, 0, 0)
		if err := net.Step(xb, yb); err != nil {
			t.Fatal(err)
		}
		loss, err := net.Loss()
		if err != nil {
			t.Fatal(err)
		}
		mse := 0.0
		for r := range batch {
			e := float64(q1[r]) - float64(target[r])
			mse += e * e / batch
		}
		if math.Abs(float64(loss)-mse) > tol*mse {
			t.Errorf("step %d: loss %.9g, the CPU critic's %.9g", step, loss, mse)
		}
		grads := download(t, net, net.Grads())
		for i := range grads {
			g, err := cg.Params[i].Grad()
			if err != nil {
				t.Fatal(err)
			}
			devicetest.CloseTo(t, cg.Params[i].Name()+" gradient", grads[i], g.Data().([]float32), tol, 0, 0)
		}
		// models.Adam from the same weights, moments and step count with
		// the device's gradients.
		for i := range p0 {
			adam.Params()[i] = append([]float32(nil), p0[i]...)
			adam.M[i], adam.V[i] = m0[i], v0[i]
		}
		adam.T = step - 1
		if err := adam.StepGrads(grads); err != nil {
			t.Fatal(err)
		}
		p1, m1, v1 := download(t, net, net.Params()), download(t, net, ms), download(t, net, vs)
		for i := range p1 {
			ulps(t, "weight", p1[i], adam.Params()[i], 0)
			ulps(t, "m", m1[i], adam.M[i], 0)
			ulps(t, "v", v1[i], adam.V[i], 0)
		}
		t.Logf("step %d: loss %.7f, CPU %.7f", step, loss, mse)
	}
}

func normal(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func download(t *testing.T, net *nn.MLP, bufs []device.Buffer) [][]float32 {
	t.Helper()
	v, err := net.Download(bufs)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ulps fails where got and want are more than n float32 steps apart.
func ulps(t *testing.T, what string, got, want []float32, n float64) {
	t.Helper()
	bad := 0
	for i := range want {
		step := float64(math.Nextafter32(float32(math.Abs(float64(want[i]))), float32(math.Inf(1))) - float32(math.Abs(float64(want[i]))))
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= n*step) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %.9g, models.Adam %.9g", what, i, got[i], want[i])
			}
		}
	}
}
