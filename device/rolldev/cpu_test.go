package rolldev_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/device/rolldev/rolldevtest"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// TestPredictMatchesReferences: on emu, Direct's Predict and PredictDropout
// agree within 1e-4 with models' Go forward and the packed ONNX graph on
// ONNX Runtime's CPU provider (masks from infer.DropoutKeep): 300 plans
// and then 151 on the same Direct, lengths 1..m shuffled, a small model
// without and with dropout 0.1, hopper's size with dropout, and the small
// model with products summed in float64 (sacdevtest.Reordered: another
// sum order, as cuBLAS's).
func TestPredictMatchesReferences(t *testing.T) {
	for _, c := range []struct {
		name    string
		o       rolldevtest.Options
		reorder bool
	}{
		{name: "small", o: rolldevtest.Options{Seed: 1}},
		{name: "small_dropout", o: rolldevtest.Options{Dropout: 0.1, Seed: 2}},
		{name: "hopper_dropout", o: rolldevtest.Options{Cfg: rolldevtest.Hopper, Dropout: 0.1, Seed: 3}},
		{name: "small_dropout_reordered", o: rolldevtest.Options{Dropout: 0.1, Seed: 4}, reorder: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := emu.New()
			defer d.Close()
			if c.reorder {
				rolldevtest.Compare(t, sacdevtest.Reordered(d), c.o)
				return
			}
			rolldevtest.Compare(t, d, c.o)
		})
	}
}

// TestPredictErrors: wrong sizes, lengths, plan counts, weights and the
// wrong call for the model's dropout are errors that name the problem,
// not panics.
func TestPredictErrors(t *testing.T) {
	d := emu.New()
	defer d.Close()
	m, err := rolldevtest.NewModel(rolldevtest.Small, 5)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rolldevtest.Config(m, 0)
	for _, c := range []struct {
		cfg  rolldev.ADMConfig
		max  int
		want string
	}{
		{rolldev.ADMConfig{}, 10, "invalid sizes"},
		{func() rolldev.ADMConfig { c := cfg; c.Dropout = 1; return c }(), 10, "dropout"},
		{cfg, 0, "plans"},
		{cfg, 1 << 30, "exceed"},
	} {
		if _, err := rolldev.NewDirect(d, c.cfg, c.max); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewDirect(%+v, %d): %v, want an error naming %q", c.cfg, c.max, err, c.want)
		}
	}
	e, err := rolldev.NewDirect(d, cfg, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n, od, ad, mm = 12, 11, 3, 4
	in := rolldevtest.RandomInputs(m, n, rand.New(rand.NewSource(1)))
	next, rew, lv := make([]float32, n*od), make([]float32, n), make([]float32, n*(od+1))
	predict := func(obs, acts []float32, lens []int32, next, rew, lv []float32) error {
		return e.Predict(obs, acts, lens, next, rew, lv)
	}
	expect := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", what, err, want)
		}
	}
	expect("no weights", predict(in.Obs, in.Acts, in.Lens, next, rew, lv), "no weights")
	w := rolldevtest.Weights(m)
	bad := w
	bad.Tensors = w.Tensors[1:]
	expect("a tensor short", e.SetADM(bad), "tensors")
	bad.Tensors = append([][]float32{w.Tensors[0][1:]}, w.Tensors[1:]...)
	expect("a short tensor", e.SetADM(bad), "tensor 0 has")
	bad = w
	bad.NormStd = w.NormStd[1:]
	expect("a short normaliser", e.SetADM(bad), "normaliser")
	bad = w
	bad.Eps = 0
	expect("eps 0", e.SetADM(bad), "eps")
	if err := e.SetADM(w); err != nil {
		t.Fatal(err)
	}
	lens := func(q int, k int32) []int32 {
		l := append([]int32(nil), in.Lens...)
		l[q] = k
		return l
	}
	expect("obs", predict(in.Obs[1:], in.Acts, in.Lens, next, rew, lv), "obs has")
	expect("acts", predict(in.Obs, in.Acts[:n*ad], in.Lens, next, rew, lv), "acts has")
	expect("next", predict(in.Obs, in.Acts, in.Lens, next[1:], rew, lv), "next has")
	expect("rew", predict(in.Obs, in.Acts, in.Lens, next, rew[1:], lv), "rew has")
	expect("lv", predict(in.Obs, in.Acts, in.Lens, next, rew, lv[:n*od]), "lv has")
	expect("k 0", predict(in.Obs, in.Acts, lens(3, 0), next, rew, lv), "plan 3 has length 0")
	expect("k m+1", predict(in.Obs, in.Acts, lens(5, mm+1), next, rew, lv), "plan 5 has length 5")
	big := rolldevtest.RandomInputs(m, 21, rand.New(rand.NewSource(2)))
	expect("21 plans", e.Predict(big.Obs, big.Acts, big.Lens, make([]float32, 21*od), make([]float32, 21),
		make([]float32, 21*(od+1))), "at most 20")
	expect("dropout call", e.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows, 1, 0, next, rew, lv), "no dropout")
	if err := predict(in.Obs, in.Acts, in.Lens, next, rew, lv); err != nil {
		t.Fatalf("valid call: %v", err)
	}
	if err := predict(nil, nil, nil, nil, nil, nil); err != nil {
		t.Fatalf("no plans: %v", err)
	}

	ed, err := rolldevtest.NewDirect(d, m, 0.1, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Close()
	expect("plain call", ed.Predict(in.Obs, in.Acts, in.Lens, next, rew, lv), "MC dropout")
	expect("rows", ed.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows[1:], 1, 0, next, rew, lv), "start rows")
	expect("step", ed.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows, 1, 1<<40, next, rew, lv), "step")
	if err := ed.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows, 1, 0, next, rew, lv); err != nil {
		t.Fatalf("valid dropout call: %v", err)
	}
	if err := ed.Close(); err != nil {
		t.Fatal(err)
	}
	expect("closed", ed.PredictDropout(in.Obs, in.Acts, in.Lens, in.Rows, 1, 0, next, rew, lv), "closed")
	expect("closed", ed.SetADM(w), "closed")
}

// BenchmarkPredict times Predict on emu at hopper's size over 1024 plans
// (device/cuda's BenchmarkRolloutPredict times 131072 on a GPU).
func BenchmarkPredict(b *testing.B) {
	d := emu.New()
	defer d.Close()
	rolldevtest.Bench(b, d, 1024)
}
