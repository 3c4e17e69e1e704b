package onnx_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestADMDropoutOffGraphsUnchanged: without dropout the ADM graphs are byte
// for byte those of the code before MC dropout existed (SHA-256 taken at
// commit 74ecd04 from the same model; packed and step since their rewrite
// without data-dependent Slice), so runs with --rollout-dropout off
// roll out exactly as before. A deliberate change of the graphs updates
// these hashes.
func TestADMDropoutOffGraphsUnchanged(t *testing.T) {
	a, err := models.NewADM(models.ADMConfig{ObsDim: 5, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 2, M: 3}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"task": "x"}
	want := map[string]string{
		"gru":      "6e6c796a264934bda6b4700f390b4adc1068b32b8e379733d5f7f6dcce286a01",
		"unrolled": "103292b3714c7e7e2d0d2f0b171c0768a9882728e3fb1c72d20cdec6c956a4ce",
		"packed":   "f6b350552e0e389ad907fc29acea7207e36f0b340e0331b01571d5217c84b1b4",
		"step":     "1208cb128367ab981dfe75c7793a10d07950825ff2b628a5c5465be45c012441",
	}
	check := func(name string, b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want[name] {
			t.Errorf("%s graph without dropout changed: sha256 %s, want %s", name, got, want[name])
		}
		return b
	}
	for _, f := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled, onnx.ADMPacked} {
		b, err := onnx.ExportADM(a, onnx.ADMOptions{Form: f}, meta)
		check(f.String(), b, err)
		withDrop, err := onnx.ExportADM(a, onnx.ADMOptions{Form: f, Dropout: 0.1}, meta)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, withDrop) {
			t.Fatalf("%v: the graph with dropout is the graph without", f)
		}
	}
	b, err := onnx.ExportADMStep(a, nil)
	check("step", b, err)
	b, err = onnx.ExportADMStepWith(a, onnx.ADMStepOptions{}, nil)
	check("step", b, err)
}

// TestADMDropoutExportErrors: a probability outside [0, 1) and dropout with
// all_mean are refused with an error naming dropout.
func TestADMDropoutExportErrors(t *testing.T) {
	a, err := models.NewADM(models.ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 1, M: 2}, rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		if _, err := onnx.ExportADM(a, onnx.ADMOptions{Dropout: p}, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("dropout")) {
			t.Errorf("ExportADM dropout %v: err %v", p, err)
		}
		if _, err := onnx.ExportADMStepWith(a, onnx.ADMStepOptions{Dropout: p}, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("dropout")) {
			t.Errorf("ExportADMStepWith dropout %v: err %v", p, err)
		}
	}
	if _, err := onnx.ExportADM(a, onnx.ADMOptions{Form: onnx.ADMUnrolled, AllSteps: true, Dropout: 0.1}, nil); err == nil {
		t.Error("dropout with AllSteps was accepted")
	}
}
