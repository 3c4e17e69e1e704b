package onnx_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models"
	ort "github.com/yalue/onnxruntime_go"
)

// input is one named ORT input tensor.
type input struct {
	name  string
	shape []int64
	f32   []float32
	i32   []int32
}

func (in input) value() (ort.Value, error) {
	if in.i32 != nil {
		return ort.NewTensor(ort.NewShape(in.shape...), in.i32)
	}
	return ort.NewTensor(ort.NewShape(in.shape...), in.f32)
}

// output is one float32 ORT output.
type output struct {
	shape []int64
	data  []float32
}

// newSession opens model on ORT with the given intra-op thread count.
func newSession(model []byte, inputs, outputs []string, threads int) (*ort.DynamicAdvancedSession, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(threads); err != nil {
		return nil, err
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	return ort.NewDynamicAdvancedSessionWithONNXData(model, inputs, outputs, opts)
}

// runORT runs model once and returns the named float32 outputs.
func runORT(t testing.TB, model []byte, ins []input, outNames []string) map[string]output {
	t.Helper()
	names := make([]string, len(ins))
	vals := make([]ort.Value, len(ins))
	for i, in := range ins {
		names[i] = in.name
		v, err := in.value()
		if err != nil {
			t.Fatalf("input %s: %v", in.name, err)
		}
		defer v.Destroy()
		vals[i] = v
	}
	s, err := newSession(model, names, outNames, 1)
	if err != nil {
		t.Fatalf("ORT session: %v", err)
	}
	defer s.Destroy()
	outs := make([]ort.Value, len(outNames))
	if err := s.Run(vals, outs); err != nil {
		t.Fatalf("ORT run: %v", err)
	}
	res := map[string]output{}
	for i, o := range outs {
		defer o.Destroy()
		tf, ok := o.(*ort.Tensor[float32])
		if !ok {
			t.Fatalf("output %s is %T, want float32 tensor", outNames[i], o)
		}
		res[outNames[i]] = output{shape: []int64(tf.GetShape()), data: append([]float32(nil), tf.GetData()...)}
	}
	return res
}

// relErr returns max|got-want| / max|want|.
func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// expect checks one output's shape and its relative error against want.
func expect(t *testing.T, outs map[string]output, name string, shape []int64, want []float64, tol float64) {
	t.Helper()
	o, ok := outs[name]
	if !ok {
		t.Fatalf("no output %s", name)
	}
	if fmt.Sprint(o.shape) != fmt.Sprint(shape) {
		t.Fatalf("%s: shape %v, want %v", name, o.shape, shape)
	}
	if len(o.data) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(o.data), len(want))
	}
	for i, v := range want {
		if math.IsNaN(v) || math.IsNaN(float64(o.data[i])) {
			t.Fatalf("%s[%d]: NaN (got %v, want %v)", name, i, o.data[i], v)
		}
	}
	if e := relErr(o.data, want); e > tol {
		t.Errorf("%s: relative error %.3g > %.0g", name, e, tol)
	} else {
		t.Logf("%s: relative error %.3g", name, e)
	}
}

func randVec(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

func uniformVec(rng *rand.Rand, n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return v
}

// randNormalizer gives a non-trivial normaliser of dimension n.
func randNormalizer(rng *rand.Rand, n int) models.Normalizer {
	return models.Normalizer{Mean: randVec(rng, n, 1), Std: uniformVec(rng, n, 0.3, 3)}
}

// randBounds gives bounds tight enough for the soft clamp to matter
// (checkClampActive relies on Max in [0, 0.8] and Min in [-2.8, -2.2]).
func randBounds(rng *rand.Rand, n int) models.LogVarBounds {
	return models.LogVarBounds{Max: uniformVec(rng, n, 0, 0.8), Min: uniformVec(rng, n, -2.8, -2.2)}
}

// randADM returns an ADM with every parameter randomised. The output layer
// is spread so that log-variances reach both soft bounds.
func randADM(t testing.TB, seed int64, cfg models.ADMConfig) *models.ADM {
	rng := rand.New(rand.NewSource(seed))
	m, err := models.NewADM(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	m.Norm = randNormalizer(rng, cfg.ObsDim+cfg.ActDim)
	for i := range m.Blocks {
		m.Blocks[i].Norm.Gamma = uniformVec(rng, cfg.Hidden, 0.5, 1.5)
		m.Blocks[i].Norm.Beta = randVec(rng, cfg.Hidden, 0.1)
	}
	spreadLogVar(rng, &m.Out, cfg.ObsDim+1)
	m.Bounds = randBounds(rng, cfg.ObsDim+1)
	return m
}

// spreadLogVar scales up a Gaussian head's weights and spreads its
// log-variance biases over [-8, 6], so that raw log-variances fall below,
// inside and above the soft bounds.
func spreadLogVar(rng *rand.Rand, l *models.Linear, d int) {
	for j := range l.W {
		l.W[j] *= 5
	}
	copy(l.B[d:], uniformVec(rng, d, -8, 6))
}

// randEnsemble returns an ensemble with random weights, normaliser and bounds.
func randEnsemble(seed int64, obsDim, actDim, n int, hidden []int) *models.Ensemble {
	rng := rand.New(rand.NewSource(seed))
	e := models.NewEnsemble(obsDim, actDim, n, hidden, rng)
	e.Norm = randNormalizer(rng, obsDim+actDim)
	for i := range e.Bounds {
		e.Bounds[i] = randBounds(rng, obsDim+1)
		spreadLogVar(rng, &e.Members[i].Layers[len(e.Members[i].Layers)-1], obsDim+1)
	}
	e.Elites = []int{0, 2}
	return e
}

// randActor returns an actor for actions in asymmetric bounds.
func randActor(seed int64, obsDim, actDim int, hidden []int) *models.Actor {
	rng := rand.New(rand.NewSource(seed))
	low, high := make([]float64, actDim), make([]float64, actDim)
	for i := range low {
		low[i] = -1 - rng.Float64()
		high[i] = 0.5 + 2*rng.Float64()
	}
	a := models.NewActor(obsDim, low, high, hidden, rng)
	l := &a.Net.Layers[len(a.Net.Layers)-1]
	for j := range l.W {
		l.W[j] *= 3
	}
	return a
}
