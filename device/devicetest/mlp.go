package devicetest

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/nn"
)

// The unit of the GPU check: a SAC critic's update shape (hopper: 11
// observations + 3 actions), batch 256, Adam at 3e-4.
var (
	mlpSizes = []int{14, 256, 256, 1}
	mlpBatch = 256
	mlpLR    = float32(3e-4)
)

// initMLP returns PyTorch-style initial weights (uniform ±1/sqrt(in) for W
// and B) in models' order.
func initMLP(r *rand.Rand, sizes []int) [][]float32 {
	var ps [][]float32
	for l := 0; l+1 < len(sizes); l++ {
		bound := 1 / math.Sqrt(float64(sizes[l]))
		for _, n := range []int{sizes[l] * sizes[l+1], sizes[l+1]} {
			p := make([]float32, n)
			for i := range p {
				p[i] = float32((2*r.Float64() - 1) * bound)
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// refGrads is the float64 reference of one forward and backward pass of a
// ReLU MLP with a mean-squared-error loss: the loss and the gradients of
// params (W [in, out] row-major, B [out]) for x [batch, in], y [batch, out].
func refGrads(sizes []int, params [][]float64, x, y []float64, batch int) (float64, [][]float64) {
	L := len(sizes) - 1
	acts := [][]float64{x}
	for l := range L {
		in, out := sizes[l], sizes[l+1]
		w, b := params[2*l], params[2*l+1]
		h := make([]float64, batch*out)
		for r := range batch {
			for j := range out {
				s := b[j]
				for i := range in {
					s += acts[l][r*in+i] * w[i*out+j]
				}
				if l < L-1 {
					s = max(s, 0)
				}
				h[r*out+j] = s
			}
		}
		acts = append(acts, h)
	}
	pred := acts[L]
	count := float64(len(pred))
	loss := 0.0
	g := make([]float64, len(pred))
	for i, p := range pred {
		loss += (p - y[i]) * (p - y[i]) / count
		g[i] = 2 * (p - y[i]) / count
	}
	grads := make([][]float64, len(params))
	for l := L - 1; l >= 0; l-- {
		in, out := sizes[l], sizes[l+1]
		w := params[2*l]
		dw, db := make([]float64, in*out), make([]float64, out)
		for r := range batch {
			for j := range out {
				db[j] += g[r*out+j]
				for i := range in {
					dw[i*out+j] += acts[l][r*in+i] * g[r*out+j]
				}
			}
		}
		grads[2*l], grads[2*l+1] = dw, db
		if l == 0 {
			break
		}
		gin := make([]float64, batch*in)
		for r := range batch {
			for i := range in {
				if acts[l][r*in+i] <= 0 {
					continue
				}
				s := 0.0
				for j := range out {
					s += g[r*out+j] * w[i*out+j]
				}
				gin[r*in+i] = s
			}
		}
		g = gin
	}
	return loss, grads
}

func f64s(xs [][]float32) [][]float64 {
	out := make([][]float64, len(xs))
	for i, x := range xs {
		out[i] = f64(x)
	}
	return out
}

// TestMLP checks three training steps of nn.MLP on d, each from the
// device's own state (weights and Adam moments, downloaded) against the
// float64 reference of the same step from that state: the loss and every
// gradient within tol (relative to the largest of each tensor), then Adam's
// moments and the new weights from the device's gradients.
func TestMLP(t *testing.T, d device.Device, tol float64) {
	r := rand.New(rand.NewPCG(7, 11))
	net, err := nn.NewMLP(d, mlpSizes, mlpBatch, mlpLR)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if err := net.Upload(net.Params(), initMLP(r, mlpSizes)); err != nil {
		t.Fatal(err)
	}
	in, out := mlpSizes[0], mlpSizes[len(mlpSizes)-1]
	h := h{t, d}
	xb, yb := h.alloc(device.Float32, mlpBatch*in), h.alloc(device.Float32, mlpBatch*out)
	down := func(bs []device.Buffer) [][]float64 {
		v, err := net.Download(bs)
		if err != nil {
			t.Fatal(err)
		}
		return f64s(v)
	}
	for step := 1; step <= 3; step++ {
		x, y := randn(r, mlpBatch*in, 1), randn(r, mlpBatch*out, 1)
		if err := d.Upload(xb, x); err != nil {
			t.Fatal(err)
		}
		if err := d.Upload(yb, y); err != nil {
			t.Fatal(err)
		}
		ms, vs := net.Moments()
		p0, m0, v0 := down(net.Params()), down(ms), down(vs)
		if err := net.Step(xb, yb); err != nil {
			t.Fatal(err)
		}
		loss, err := net.Loss()
		if err != nil {
			t.Fatal(err)
		}
		wantLoss, wantGrads := refGrads(mlpSizes, p0, f64(x), f64(y), mlpBatch)
		if math.Abs(float64(loss)-wantLoss) > tol*wantLoss {
			t.Errorf("step %d: loss %.9g, want %.9g", step, loss, wantLoss)
		}
		grads, p1, m1, v1 := down(net.Grads()), down(net.Params()), down(ms), down(vs)
		const b1, b2, eps = 0.9, 0.999, 1e-8
		for i, g := range wantGrads {
			compare(t, "gradient", f32(grads[i]), g, 0, tol*maxAbs(g))
			// Adam is checked stage by stage from the device's own inputs:
			// the moments from its gradients (compared just above), the
			// weights from its moments. Where a gradient is near eps or a
			// moment cancels, float32 noise upstream moves the result by
			// more than tol; that noise is the upstream stage's, checked
			// there.
			n := len(g)
			mr, vr, mtol, vtol := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for j, gj := range grads[i] {
				mr[j] = b1*m0[i][j] + (1-b1)*gj
				vr[j] = b2*v0[i][j] + (1-b2)*gj*gj
				// A few roundings of each term.
				mtol[j] = 0x1p-21 * (b1*math.Abs(m0[i][j]) + (1-b1)*math.Abs(gj))
				vtol[j] = 0x1p-21 * (b2*v0[i][j] + (1-b2)*gj*gj)
			}
			within(t, "m", m1[i], mr, mtol)
			within(t, "v", v1[i], vr, vtol)
			pr, ptol := make([]float64, n), make([]float64, n)
			for j := range pr {
				mh := m1[i][j] / (1 - math.Pow(b1, float64(step)))
				vh := v1[i][j] / (1 - math.Pow(b2, float64(step)))
				d := float64(mlpLR) * mh / (math.Sqrt(vh) + eps)
				pr[j] = p0[i][j] - d
				// The step in float32 (a few roundings), then the weight
				// rounded to float32.
				ptol[j] = 0x1p-20*math.Abs(d) + 0x1p-23*math.Abs(pr[j])
			}
			within(t, "weight", p1[i], pr, ptol)
		}
		t.Logf("step %d: loss %.7f (reference %.7f)", step, loss, wantLoss)
	}
}

func f32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// newBench returns an MLP of the checked shape on d with a batch uploaded.
func newBench(tb testing.TB, d device.Device) (*nn.MLP, device.Buffer, device.Buffer) {
	r := rand.New(rand.NewPCG(3, 5))
	net, err := nn.NewMLP(d, mlpSizes, mlpBatch, mlpLR)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = net.Close() })
	if err := net.Upload(net.Params(), initMLP(r, mlpSizes)); err != nil {
		tb.Fatal(err)
	}
	h := h{tb, d}
	x := h.up(randn(r, mlpBatch*mlpSizes[0], 1))
	y := h.up(randn(r, mlpBatch*mlpSizes[len(mlpSizes)-1], 1))
	return net, x, y
}

// BenchMLP times nn.MLP.Step (the checked shape) on d.
func BenchMLP(b *testing.B, d device.Device) {
	net, x, y := newBench(b, d)
	BenchSteps(b, d, "step", func() error { return net.Step(x, y) })
}

// TimeMLP logs the milliseconds per nn.MLP.Step (the checked shape) over
// steps steps on d, after a warm-up, and how the loss moved.
func TimeMLP(t *testing.T, d device.Device, steps int) {
	net, x, y := newBench(t, d)
	for range 10 {
		if err := net.Step(x, y); err != nil {
			t.Fatal(err)
		}
	}
	first, err := net.Loss()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range steps {
		if err := net.Step(x, y); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	last, err := net.Loss()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: MLP %v batch %d train step: %.4f ms/step over %d steps (loss %.4f -> %.4f on one batch)",
		d.Name(), mlpSizes, mlpBatch, el.Seconds()*1e3/float64(steps), steps, first, last)
	if !(last < first) {
		t.Errorf("loss did not fall on a fixed batch: %v -> %v", first, last)
	}
}

// within fails t where |got[i] - want[i]| > tol[i].
func within(t testing.TB, what string, got, want, tol []float64) {
	t.Helper()
	bad := 0
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol[i]) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %.9g, want %.9g ± %.3g", what, i, got[i], want[i], tol[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(want))
	}
}
