package infer_test

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestBenchRollout runs the exported benchmark helper on small models: both
// engines, Rows·Horizon transitions each, positive rates; and it refuses
// models of different sizes.
func TestBenchRollout(t *testing.T) {
	f := newADMFixture(t, 91, smallADMConfig(3), onnx.ADMGRUOp)
	res, err := infer.BenchRollout(infer.BenchConfig{Actor: f.actorONNX, ADM: f.admONNX, ADMStep: f.stepONNX,
		Rows: 50, Horizon: 3, Penalty: true, Threads: 1, Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Engine != "direct" || res[1].Engine != "incremental" {
		t.Fatalf("results %+v, want direct and incremental", res)
	}
	for _, r := range res {
		if r.Transitions != 150 || !(r.Seconds > 0) || r.PerSecond != float64(r.Transitions)/r.Seconds {
			t.Fatalf("result %+v: want 150 transitions and PerSecond = Transitions/Seconds", r)
		}
	}
	g := newADMFixture(t, 92, smallADMConfig(2), onnx.ADMGRUOp)
	_, err = infer.BenchRollout(infer.BenchConfig{Actor: f.actorONNX, ADM: f.admONNX, ADMStep: g.stepONNX, Rows: 5, Horizon: 1})
	wantErr(t, "mismatched models", err, "differ")
	_, err = infer.BenchRollout(infer.BenchConfig{Actor: f.actorONNX, ADM: f.admONNX, Horizon: 1})
	wantErr(t, "no rows", err, "rows")
}

// Hopper-size models for the roll-out benchmarks: obs 11, act 3, m = 5,
// 3x200 GRU, 4 ResBlocks, 256x256 actor.
var (
	hopperOnce              sync.Once
	hopperActor, hopperStep []byte
	hopperADM               map[onnx.ADMForm][]byte
	hopperErr               error
)

func hopperModels(b *testing.B) {
	ortskip.IfMissing(b)
	hopperOnce.Do(func() {
		rng := rand.New(rand.NewSource(1))
		adm, err := models.NewADM(models.DefaultADMConfig(11, 3, 5), rng)
		if err != nil {
			hopperErr = err
			return
		}
		actor := models.NewActor(11, []float64{-1, -1, -1}, []float64{1, 1, 1}, []int{256, 256}, rng)
		if hopperActor, hopperErr = onnx.ExportActor(actor, nil); hopperErr != nil {
			return
		}
		if hopperStep, hopperErr = onnx.ExportADMStep(adm, nil); hopperErr != nil {
			return
		}
		hopperADM = map[onnx.ADMForm][]byte{}
		for _, f := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
			if hopperADM[f], hopperErr = onnx.ExportADM(adm, onnx.ADMOptions{Form: f}, nil); hopperErr != nil {
				return
			}
		}
	})
	if hopperErr != nil {
		b.Fatal(hopperErr)
	}
}

// benchRollout times one engine on 10k full-window rows, H = 5.
func benchRollout(b *testing.B, open func() (infer.Roller, error), penalty float32) {
	const rows, horizon = 10000, 5
	e, err := open()
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	p, err := infer.OpenPolicy(hopperActor, infer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	start := testfix.RandStart(rand.New(rand.NewSource(2)), rows, 5, 11, 3, func(int) int { return 5 })
	cfg := infer.RollConfig{Horizon: horizon, Penalty: penalty}
	b.ResetTimer()
	total := 0
	for i := 0; i < b.N; i++ {
		tr, err := e.Rollout(p, start, cfg, rand.New(rand.NewSource(int64(i))))
		if err != nil {
			b.Fatal(err)
		}
		total += tr.N
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "transitions/s")
}

func openDirect(form onnx.ADMForm) func() (infer.Roller, error) {
	return func() (infer.Roller, error) { return infer.OpenADMDirect(hopperADM[form], infer.Options{}) }
}

func openIncremental() (infer.Roller, error) {
	return infer.OpenADMIncremental(hopperStep, infer.Options{})
}

// benchDirectForms benchmarks the direct engine in both ADM forms with
// uncertainty penalty coefficient penalty.
func benchDirectForms(b *testing.B, penalty float32) {
	hopperModels(b)
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
		b.Run(form.String(), func(b *testing.B) {
			benchRollout(b, openDirect(form), penalty)
		})
	}
}

// BenchmarkRolloutONDirect: ADMPO-ON style (no uncertainty), direct engine.
func BenchmarkRolloutONDirect(b *testing.B) { benchDirectForms(b, 0) }

// BenchmarkRolloutONIncremental: ADMPO-ON style, incremental engine.
func BenchmarkRolloutONIncremental(b *testing.B) {
	hopperModels(b)
	benchRollout(b, openIncremental, 0)
}

// BenchmarkRolloutOFFDirect: ADMPO-OFF style (U^ADM penalty), direct engine.
func BenchmarkRolloutOFFDirect(b *testing.B) { benchDirectForms(b, 1) }

// BenchmarkRolloutOFFIncremental: ADMPO-OFF style, incremental engine.
func BenchmarkRolloutOFFIncremental(b *testing.B) {
	hopperModels(b)
	benchRollout(b, openIncremental, 1)
}
