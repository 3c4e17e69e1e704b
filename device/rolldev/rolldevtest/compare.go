package rolldevtest

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// Small is a model small enough for emu tests: hopper's dimensions, two
// GRU layers of 24 units, two ResBlocks, m = 4.
var Small = models.ADMConfig{ObsDim: 11, ActDim: 3, Hidden: 24, Layers: 2, ResBlocks: 2, M: 4}

// Hopper is the paper's size at hopper's dimensions (models.DefaultADMConfig,
// m = 5 as admpo's hopper runs): three GRU layers of 200, four ResBlocks.
var Hopper = models.DefaultADMConfig(11, 3, 5)

// Options tunes Compare.
type Options struct {
	// Cfg sizes the model; zero: Small.
	Cfg models.ADMConfig
	// Plans is the first call's plan count (0: 300); a second call on the
	// same Direct takes about half as many.
	Plans int
	// Dropout is the MC dropout probability (0: none, Predict).
	Dropout float64
	// Tol bounds |device - reference| by Tol·(1+|reference|) (0: 1e-4).
	Tol float64
	// Seed draws the model and the inputs.
	Seed int64
}

// NewModel returns a random ADM of configuration c whose every part
// matters: a normaliser far from the identity, perturbed LayerNorms and
// log-variance bounds, and an output layer large enough that log-variances
// reach the soft bounds.
func NewModel(c models.ADMConfig, seed int64) (*models.ADM, error) {
	rng := rand.New(rand.NewSource(seed))
	m, err := models.NewADM(c, rng)
	if err != nil {
		return nil, err
	}
	for i := range m.Norm.Mean {
		m.Norm.Mean[i] = float32(rng.NormFloat64())
		m.Norm.Std[i] = float32(0.5 + rng.Float64())
	}
	for i := range m.Blocks {
		nb := &m.Blocks[i].Norm
		for c := range nb.Gamma {
			nb.Gamma[c] += float32(0.3 * rng.NormFloat64())
			nb.Beta[c] = float32(0.2 * rng.NormFloat64())
		}
	}
	for c := range m.Bounds.Max {
		m.Bounds.Max[c] += float32(0.3 * rng.Float64())
		m.Bounds.Min[c] -= float32(0.3 * rng.Float64())
	}
	for i := range m.Out.W {
		m.Out.W[i] *= 3
	}
	return m, nil
}

// Config is m's rolldev configuration with MC dropout p.
func Config(m *models.ADM, p float64) rolldev.ADMConfig {
	c := m.Cfg
	return rolldev.ADMConfig{ObsDim: c.ObsDim, ActDim: c.ActDim, M: c.M, Hidden: c.Hidden, Layers: c.Layers,
		ResBlocks: c.ResBlocks, Dropout: p}
}

// Weights is m's weights as rolldev loads them.
func Weights(m *models.ADM) rolldev.ADMWeights {
	eps := float32(1e-5)
	if len(m.Blocks) > 0 {
		eps = m.Blocks[0].Norm.Eps
	}
	return rolldev.ADMWeights{Tensors: m.TrainedTensors(), NormMean: m.Norm.Mean, NormStd: m.Norm.Std, Eps: eps}
}

// NewDirect returns a Direct on d for m with dropout p and room for
// maxPlans plans, its weights set.
func NewDirect(d device.Device, m *models.ADM, p float64, maxPlans int) (*rolldev.Direct, error) {
	e, err := rolldev.NewDirect(d, Config(m, p), maxPlans)
	if err != nil {
		return nil, err
	}
	if err := e.SetADM(Weights(m)); err != nil {
		return nil, fmt.Errorf("%w (closing: %v)", err, e.Close())
	}
	return e, nil
}

// Inputs are one Predict call's plans.
type Inputs struct {
	Obs, Acts  []float32 // [n, od] start states, [m, n, ad] sequence-first
	Lens, Rows []int32   // k in 1..m, and each plan's start row (dropout keys)
	Seed       int64     // the roll-out's dropout seed
	Step       int       // the roll-out step
}

// N is the plan count.
func (in Inputs) N() int { return len(in.Lens) }

// RandomInputs draws n plans for m: start states about the normaliser's
// mean, actions in [-1, 1] (past each plan's k too: they must not count),
// lengths cycling through 1..M in shuffled order, random start rows past
// a random offset, a random seed (negative for odd calls) and step.
func RandomInputs(m *models.ADM, n int, rng *rand.Rand) Inputs {
	c := m.Cfg
	in := Inputs{Obs: make([]float32, n*c.ObsDim), Acts: make([]float32, c.M*n*c.ActDim), Lens: make([]int32, n),
		Rows: make([]int32, n), Seed: rng.Int63(), Step: rng.Intn(100)}
	if rng.Intn(2) == 1 {
		in.Seed = -in.Seed
	}
	for q := range n {
		for j := range c.ObsDim {
			in.Obs[q*c.ObsDim+j] = m.Norm.Mean[j] + m.Norm.Std[j]*float32(rng.NormFloat64())
		}
	}
	for i := range in.Acts {
		in.Acts[i] = float32(2*rng.Float64() - 1)
	}
	row0 := rng.Intn(1 << 20)
	for q, p := range rng.Perm(n) {
		in.Lens[q] = int32(1 + p%c.M)
		in.Rows[q] = int32(row0 + rng.Intn(4*n))
	}
	return in
}

// Outputs are Predict's results.
type Outputs struct{ Next, Rew, LV []float32 }

func newOutputs(n, od int) Outputs {
	return Outputs{make([]float32, n*od), make([]float32, n), make([]float32, n*(od+1))}
}

// Predict runs e on in: Predict without dropout, PredictDropout with.
func Predict(e *rolldev.Direct, in Inputs) (Outputs, error) {
	out := newOutputs(in.N(), e.Config().ObsDim)
	return out, predictInto(e, in, out)
}

// predictInto is Predict into out.
func predictInto(e *rolldev.Direct, in Inputs, out Outputs) error {
	if e.Config().Dropout == 0 {
		return e.Predict(in.Obs, in.Acts, in.Lens, out.Next, out.Rew, out.LV)
	}
	return e.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows, in.Seed, in.Step, out.Next, out.Rew, out.LV)
}

// mults is plan q's dropout multipliers as models' HeadDropout takes them,
// infer.DropoutKeep's flags times 1/(1-p) ([blocks, hidden]).
func mults(m *models.ADM, in Inputs, q int, p float64) []float32 {
	c := m.Cfg
	keep := make([]float32, c.ResBlocks*c.Hidden)
	infer.DropoutKeep(in.Seed, in.Step, int(in.Rows[q]), int(in.Lens[q]), p, keep)
	for i := range keep {
		keep[i] *= float32(1 / (1 - p))
	}
	return keep
}

// ModelsPredict is the reference of package models: the plans of each k
// as one batch through k GRUSteps and HeadDropout (with p > 0, each plan's
// infer.DropoutKeep flags), next = start + mean in float32.
func ModelsPredict(m *models.ADM, in Inputs, p float64) (Outputs, error) {
	c := m.Cfg
	n, od, ad, h, dd := in.N(), c.ObsDim, c.ActDim, c.Hidden, c.ObsDim+1
	out := newOutputs(n, od)
	for k := 1; k <= c.M; k++ {
		var idx []int
		for q, l := range in.Lens {
			if int(l) == k {
				idx = append(idx, q)
			}
		}
		b := len(idx)
		if b == 0 {
			continue
		}
		st := m.NewState(b)
		start, act := make([]float32, b*od), make([]float32, b*ad)
		for i, q := range idx {
			copy(start[i*od:], in.Obs[q*od:(q+1)*od])
		}
		for j := range k {
			for i, q := range idx {
				copy(act[i*ad:], in.Acts[(j*n+q)*ad:(j*n+q+1)*ad])
			}
			if err := m.GRUStep(st, start, act); err != nil {
				return out, err
			}
		}
		var mult []float32
		if p > 0 {
			mult = make([]float32, c.ResBlocks*b*h)
			for i, q := range idx {
				mq := mults(m, in, q, p)
				for bl := range c.ResBlocks {
					copy(mult[(bl*b+i)*h:(bl*b+i+1)*h], mq[bl*h:(bl+1)*h])
				}
			}
		}
		mean, lv := make([]float32, b*dd), make([]float32, b*dd)
		if err := m.HeadDropout(st, mult, mean, lv); err != nil {
			return out, err
		}
		for i, q := range idx {
			for j := range od {
				out.Next[q*od+j] = in.Obs[q*od+j] + mean[i*dd+j]
			}
			out.Rew[q] = mean[i*dd+od]
			copy(out.LV[q*dd:(q+1)*dd], lv[i*dd:(i+1)*dd])
		}
	}
	return out, nil
}

// ONNXPredict is the reference of the packed ONNX graph (onnx.ExportADM
// with dropout p) on ONNX Runtime's CPU provider through infer.ADMDirect,
// fed with infer.DropoutKeep's masks.
func ONNXPredict(e *infer.ADMDirect, m *models.ADM, in Inputs, p float64) (Outputs, error) {
	c := m.Cfg
	n, h := in.N(), c.Hidden
	out := newOutputs(n, c.ObsDim)
	if p == 0 {
		return out, e.Predict(in.Obs, in.Acts, in.Lens, out.Next, out.Rew, out.LV)
	}
	mask := make([]float32, c.ResBlocks*n*h) // [blocks, n, hidden] keep flags
	keep := make([]float32, c.ResBlocks*h)
	for q := range n {
		infer.DropoutKeep(in.Seed, in.Step, int(in.Rows[q]), int(in.Lens[q]), p, keep)
		for bl := range c.ResBlocks {
			copy(mask[(bl*n+q)*h:(bl*n+q+1)*h], keep[bl*h:(bl+1)*h])
		}
	}
	return out, e.PredictDropout(in.Obs, in.Acts, in.Lens, mask, out.Next, out.Rew, out.LV)
}

// OpenONNX exports m in the packed form with dropout p and opens it on
// ONNX Runtime's CPU provider, one thread.
func OpenONNX(m *models.ADM, p float64) (*infer.ADMDirect, error) {
	b, err := onnx.ExportADM(m, onnx.ADMOptions{Form: onnx.ADMPacked, Dropout: p}, nil)
	if err != nil {
		return nil, err
	}
	return infer.OpenADMDirect(b, infer.Options{Threads: 1})
}

// Diff describes how got differs from want past tol·(1+|want|) (the
// first few values and the count), "" when it does not; od is the
// observation size, to name plans and dimensions.
func Diff(got, want Outputs, od int, tol float64) string {
	var s string
	bad := 0
	check := func(what string, g, w []float32, width int) {
		for i := range w {
			gi, wi := float64(g[i]), float64(w[i])
			if math.Abs(gi-wi) <= tol*(1+math.Abs(wi)) {
				continue
			}
			if bad++; bad <= 5 {
				s += fmt.Sprintf("%s plan %d dim %d: %.9g, want %.9g\n", what, i/width, i%width, gi, wi)
			}
		}
	}
	check("next", got.Next, want.Next, od)
	check("rew", got.Rew, want.Rew, 1)
	check("lv", got.LV, want.LV, od+1)
	if bad > 0 {
		s += fmt.Sprintf("%d of %d values differ", bad, len(want.Next)+len(want.Rew)+len(want.LV))
	}
	return s
}

// Compare runs a Direct on d for a random ADM (o.Cfg, dropout o.Dropout)
// over two calls (o.Plans plans, then about half as many, with lengths
// 1..m in shuffled order and room for a few more plans) and holds each
// call's next, rew and lv to models' Go forward and, where ONNX Runtime is
// installed (a subtest skips otherwise), to the packed ONNX graph, within
// o.Tol.
func Compare(t *testing.T, d device.Device, o Options) {
	t.Helper()
	if o.Cfg == (models.ADMConfig{}) {
		o.Cfg = Small
	}
	if o.Plans == 0 {
		o.Plans = 300
	}
	if o.Tol == 0 {
		o.Tol = 1e-4
	}
	m, err := NewModel(o.Cfg, o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewDirect(d, m, o.Dropout, o.Plans+7)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	rng := rand.New(rand.NewSource(o.Seed + 1))
	var calls []Inputs
	var outs []Outputs
	for _, n := range []int{o.Plans, o.Plans/2 + 1} {
		in := RandomInputs(m, n, rng)
		got, err := Predict(e, in)
		if err != nil {
			t.Fatalf("%s: %d plans: %v", d.Name(), n, err)
		}
		want, err := ModelsPredict(m, in, o.Dropout)
		if err != nil {
			t.Fatal(err)
		}
		if s := Diff(got, want, o.Cfg.ObsDim, o.Tol); s != "" {
			t.Errorf("%s, %d plans, dropout %g, against models:\n%s", d.Name(), n, o.Dropout, s)
		}
		calls, outs = append(calls, in), append(outs, got)
	}
	t.Run("onnx", func(t *testing.T) {
		ortskip.IfMissing(t)
		g, err := OpenONNX(m, o.Dropout)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for i, in := range calls {
			want, err := ONNXPredict(g, m, in, o.Dropout)
			if err != nil {
				t.Fatal(err)
			}
			if s := Diff(outs[i], want, o.Cfg.ObsDim, o.Tol); s != "" {
				t.Errorf("%s, %d plans, dropout %g, against the packed ONNX graph:\n%s", d.Name(), in.N(), o.Dropout, s)
			}
		}
	})
}
