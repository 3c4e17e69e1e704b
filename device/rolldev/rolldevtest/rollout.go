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
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// DoneMode is how a compared roll-out ends rows (beyond a non-finite next
// state).
type DoneMode int

// Done modes: never; Spec's Eval as RollConfig.Done (on the host); Spec as
// RollConfig.DoneSpec (on the device); and both, a host Done on
// dimension 0 and Spec on the device.
const (
	DoneNone DoneMode = iota
	DoneHost
	DoneDevice
	DoneBoth
)

// Spec is the compared roll-outs' DoneSpec: a row ends when its next state
// is not finite, when dimension 1 exceeds 6 or when any dimension from 9
// on has |x| >= 6 (a few rows a step in the test data).
var Spec = rollout.DoneSpec{Finite: true, Ranges: []rollout.Range{
	{Dim: 1, Hi: 6, HasHi: true, HiIncl: true},
	{Dim: 9, ToEnd: true, Abs: true, Hi: 6, HasHi: true},
}}

// hostDone is DoneBoth's host rule: dimension 0 below -3.
func hostDone(obs []float32) bool { return obs[0] < -3 }

// RollOptions tunes CompareRollout.
type RollOptions struct {
	// Cfg sizes the ADM; zero: Small.
	Cfg models.ADMConfig
	// Hidden are the actor's hidden sizes; nil: 64, 64.
	Hidden []int
	// Rows is the start rows (0: 300), ChunkRows the chunk (0: 128) and
	// Horizon the steps (0: 5).
	Rows, ChunkRows, Horizon int
	Penalty                  float32 // 1: U^ADM on
	Dropout                  float64
	Done                     DoneMode
	Deterministic, WantMean  bool
	Compaction               rolldev.Compaction
	Mode                     rolldev.Mode // the engine's style (0: ModeAuto)
	// Tol bounds values by testfix.CloseTo (0: 1e-4); Done, Step and Back
	// must be equal.
	Tol  float64
	Seed int64
}

// NewActor returns a random actor for observations of od values and
// actions of ad, with bounds whose scale and bias are not 1 and 0.
func NewActor(od, ad int, hidden []int, seed int64) *models.Actor {
	low, high := make([]float64, ad), make([]float64, ad)
	for j := range low {
		low[j], high[j] = -0.5-0.25*float64(j), 1+0.5*float64(j)
	}
	return models.NewActor(od, low, high, hidden, rand.New(rand.NewSource(seed)))
}

// ActorWeights is a's weights as rolldev loads them.
func ActorWeights(a *models.Actor) rolldev.ActorWeights {
	w := rolldev.ActorWeights{LogStdMin: a.LogStdMin, LogStdMax: a.LogStdMax, Scale: a.Scale, Bias: a.Bias}
	for i, l := range a.Net.Layers {
		if i == 0 {
			w.Sizes = append(w.Sizes, l.In)
		}
		w.Sizes = append(w.Sizes, l.Out)
		w.Params = append(w.Params, l.W, l.B)
	}
	return w
}

// NewEngine returns an Engine on d for m with dropout p, chunks of up to
// maxRows rows and the actor a, its weights set.
func NewEngine(d device.Device, m *models.ADM, p float64, a *models.Actor, maxRows int) (*rolldev.Engine, error) {
	e, err := rolldev.New(d, Config(m, p), maxRows)
	if err != nil {
		return nil, err
	}
	if err := e.SetADM(Weights(m)); err != nil {
		return nil, fmt.Errorf("%w (closing: %v)", err, e.Close())
	}
	if err := e.SetActor(ActorWeights(a)); err != nil {
		return nil, fmt.Errorf("%w (closing: %v)", err, e.Close())
	}
	return e, nil
}

// RollCase is one compared roll-out's inputs.
type RollCase struct {
	ADM   *models.ADM
	Actor *models.Actor
	Start *rollout.Start
	Cfg   rollout.RollConfig
	Seed  int64 // the roll-out's rng seed
}

// NewRollCase draws o's model, actor, start rows (lengths 1..m in turn)
// and roll-out configuration.
func NewRollCase(o RollOptions) (RollCase, error) {
	o = o.withDefaults()
	m, err := NewModel(o.Cfg, o.Seed)
	if err != nil {
		return RollCase{}, err
	}
	c := o.Cfg
	rng := rand.New(rand.NewSource(o.Seed + 1))
	start := testfix.RandStart(rng, o.Rows, c.M, c.ObsDim, c.ActDim, func(i int) int { return 1 + i%c.M })
	// States about the normaliser's mean, as RandomInputs draws them.
	for i := range start.N {
		for j := range start.Len[i] {
			for d := range c.ObsDim {
				start.Obs[(i*c.M+j)*c.ObsDim+d] = m.Norm.Mean[d] + 0.5*m.Norm.Std[d]*float32(rng.NormFloat64())
			}
		}
	}
	cfg := rollout.RollConfig{Horizon: o.Horizon, Penalty: o.Penalty, ChunkRows: o.ChunkRows,
		DeterministicPolicy: o.Deterministic, WantMean: o.WantMean}
	spec := Spec
	switch o.Done {
	case DoneHost:
		cfg.Done = spec.Eval
	case DoneDevice:
		cfg.DoneSpec = &spec
	case DoneBoth:
		cfg.Done, cfg.DoneSpec = hostDone, &spec
	}
	return RollCase{ADM: m, Actor: NewActor(c.ObsDim, c.ActDim, o.Hidden, o.Seed+3), Start: start, Cfg: cfg,
		Seed: o.Seed + 2}, nil
}

func (o RollOptions) withDefaults() RollOptions {
	if o.Cfg == (models.ADMConfig{}) {
		o.Cfg = Small
	}
	if o.Hidden == nil {
		o.Hidden = []int{64, 64}
	}
	if o.Rows == 0 {
		o.Rows = 300
	}
	if o.ChunkRows == 0 {
		o.ChunkRows = 128
	}
	if o.Horizon == 0 {
		o.Horizon = 5
	}
	if o.Tol == 0 {
		o.Tol = 1e-4
	}
	return o
}

// RefRollout is rc's float64 reference roll-out (testfix.RefRollout with
// the Go actor, and MC dropout p's masks from rollout.DropoutKeep).
func RefRollout(t testing.TB, rc RollCase, p float64) *rollout.Transitions {
	mod := testfix.RefADMModel(rc.ADM)
	if p > 0 {
		mod = testfix.RefADMDropModel(rc.ADM, p)
	}
	c := rc.ADM.Cfg
	return testfix.RefRollout(t, testfix.ActorPolicy(rc.Actor), rc.Start, c.ObsDim, c.ActDim, rc.Cfg,
		rand.New(rand.NewSource(rc.Seed)), mod)
}

// ONNXRollout is rc's roll-out on ONNX Runtime's CPU provider by
// infer.ADMDirect (the ADM exported packed with dropout p) or, with
// incremental, infer.ADMIncremental (its step graph with dropout p), the
// actor exported as an infer.Policy.
func ONNXRollout(rc RollCase, p float64, incremental bool) (*rollout.Transitions, error) {
	var g interface {
		Rollout(*infer.Policy, *rollout.Start, rollout.RollConfig, *rand.Rand) (*rollout.Transitions, error)
		Close()
	}
	var err error
	if incremental {
		var b []byte
		if b, err = onnx.ExportADMStepWith(rc.ADM, onnx.ADMStepOptions{Dropout: p}, nil); err == nil {
			g, err = infer.OpenADMIncremental(b, infer.Options{Threads: 1})
		}
	} else {
		g, err = OpenONNX(rc.ADM, p)
	}
	if err != nil {
		return nil, err
	}
	defer g.Close()
	b, err := onnx.ExportActor(rc.Actor, nil)
	if err != nil {
		return nil, err
	}
	pol, err := infer.OpenPolicy(b, infer.Options{Threads: 1})
	if err != nil {
		return nil, err
	}
	defer pol.Close()
	return g.Rollout(pol, rc.Start, rc.Cfg, rand.New(rand.NewSource(rc.Seed)))
}

// nearThreshold describes the first next state of tr within tol·(1+|b|)
// of a bound b of Spec (or of hostDone's, with both), "" when none is: such
// data could end a row on one side and not the other.
func nearThreshold(tr *rollout.Transitions, od int, mode DoneMode, tol float64) string {
	if mode == DoneNone {
		return ""
	}
	near := func(x, b float64) bool { return math.Abs(x-b) <= tol*(1+math.Abs(b)) }
	for t := range tr.N {
		o := tr.NextObs[t*od : (t+1)*od]
		for d, v := range o {
			x := float64(v)
			bad := d == 1 && near(x, 6) || d >= 9 && near(math.Abs(x), 6) || mode == DoneBoth && d == 0 && near(x, -3)
			if bad {
				return fmt.Sprintf("transition %d's next state dim %d = %g", t, d, v)
			}
		}
	}
	return ""
}

// CompareRollout runs an Engine on d (dropout o.Dropout, compaction
// o.Compaction, mode o.Mode) over NewRollCase(o) and holds its transitions
// to the float64 reference roll-out (RefRollout) and, where ONNX Runtime
// is installed (subtests skip otherwise), to infer.ADMDirect's and
// infer.ADMIncremental's on the CPU (ONNXRollout), all from the same seed
// and ChunkRows: values within o.Tol, Done, Step and Back equal. With a
// Done mode the test data must keep 2·o.Tol clear of every threshold.
func CompareRollout(t *testing.T, d device.Device, o RollOptions) {
	t.Helper()
	o = o.withDefaults()
	rc, err := NewRollCase(o)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(d, rc.ADM, o.Dropout, rc.Actor, o.ChunkRows)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	e.Compaction, e.Mode = o.Compaction, o.Mode
	got, err := e.Rollout(rc.Start, rc.Cfg, rand.New(rand.NewSource(rc.Seed)))
	if err != nil {
		t.Fatalf("%s: %v", d.Name(), err)
	}
	od, ad := o.Cfg.ObsDim, o.Cfg.ActDim
	want := RefRollout(t, rc, o.Dropout)
	if s := nearThreshold(want, od, o.Done, 2*o.Tol); s != "" {
		t.Fatalf("the test data is near a Done threshold (%s): choose another seed", s)
	}
	ended := 0
	for _, dn := range want.Done {
		if dn {
			ended++
		}
	}
	if o.Done != DoneNone && ended == 0 {
		t.Fatalf("no row ended: the Done rule is not exercised")
	}
	t.Logf("%s: %d transitions, %d rows ended", d.Name(), want.N, ended)
	if s := testfix.DiffTransitions(got, want, od, ad, o.Tol); s != "" {
		t.Errorf("%s against the float64 reference: %s", d.Name(), s)
	}
	for _, g := range []struct {
		name, engine string
		inc          bool
	}{{"onnx", "infer.ADMDirect", false}, {"onnx_incremental", "infer.ADMIncremental", true}} {
		t.Run(g.name, func(t *testing.T) {
			ortskip.IfMissing(t)
			want, err := ONNXRollout(rc, o.Dropout, g.inc)
			if err != nil {
				t.Fatal(err)
			}
			if s := testfix.DiffTransitions(got, want, od, ad, o.Tol); s != "" {
				t.Errorf("%s against %s on ONNX Runtime: %s", d.Name(), g.engine, s)
			}
		})
	}
}
