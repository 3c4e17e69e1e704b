package infer_test

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/onnx/schema"
)

// wantErr fails unless err is non-nil and mentions every fragment.
func wantErr(t *testing.T, what string, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("%s: error %q does not mention %q", what, err, f)
		}
	}
}

// TestRolloutRejectsBadStarts checks the start-batch validation and the
// policy/model compatibility check.
func TestRolloutRejectsBadStarts(t *testing.T) {
	const m = 3
	f := newADMFixture(t, 81, smallADMConfig(m), onnx.ADMGRUOp)
	cfg := infer.RollConfig{Horizon: 2}
	good := func() *infer.Start {
		return testfix.RandStart(rand.New(rand.NewSource(1)), 4, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	}
	engines := map[string]infer.Roller{"direct": f.direct, "incremental": f.inc}
	for name, e := range engines {
		roll := func(s *infer.Start, c infer.RollConfig) error {
			_, err := e.Rollout(f.pol, s, c, rand.New(rand.NewSource(1)))
			return err
		}
		s := good()
		s.Obs = s.Obs[:len(s.Obs)-1]
		wantErr(t, name+": short obs", roll(s, cfg), "start batch sizes")
		s = good()
		s.Act = append(s.Act, 0, 0)
		wantErr(t, name+": long actions", roll(s, cfg), "start batch sizes")
		s = good()
		s.Len = s.Len[:3]
		wantErr(t, name+": missing length", roll(s, cfg), "start batch sizes")
		s = good()
		s.Len[1] = 0
		wantErr(t, name+": Len 0", roll(s, cfg), "row 1", "0 states", "1..3")
		s = good()
		s.Len[2] = m + 1
		wantErr(t, name+": Len m+1", roll(s, cfg), "row 2", "4 states", "1..3")
		s = good()
		s.Obs[(3*m+s.Len[3]-1)*f.obsDim+2] = float32(math.NaN())
		wantErr(t, name+": NaN obs", roll(s, cfg), "row 3", "NaN")
		s = good()
		s.Act[(2*(m-1))*f.actDim] = float32(math.Inf(1))
		wantErr(t, name+": Inf action", roll(s, cfg), "row 2", "action")
		s = good()
		s.M = 2
		wantErr(t, name+": wrong M", roll(s, cfg), "M=2", "m=3")
		wantErr(t, name+": nil start", roll(nil, cfg), "empty start")
		wantErr(t, name+": horizon 0", roll(good(), infer.RollConfig{}), "horizon")
	}
	// A NaN past a row's length is not part of the row and is ignored.
	s := good()
	s.Obs[(0*m+2)*f.obsDim] = float32(math.NaN()) // row 0 has Len 1
	if _, err := f.direct.Rollout(f.pol, s, cfg, rand.New(rand.NewSource(1))); err != nil {
		t.Fatalf("NaN outside row 0's window: %v", err)
	}

	// A policy for other dimensions.
	other := newTestActor(82, f.obsDim+1, []float64{-1, -1}, []float64{1, 1}, []int{8})
	ob, err := onnx.ExportActor(other, nil)
	op := openEngine(t, "actor", ob, err, infer.OpenPolicy, testOpts)
	_, err = f.direct.Rollout(op, good(), cfg, rand.New(rand.NewSource(1)))
	wantErr(t, "policy/model mismatch", err, "policy is 6x2", "model is 5x2")
}

// TestPolicyRejectsBadInputs checks Policy.Act's argument validation.
func TestPolicyRejectsBadInputs(t *testing.T) {
	f := newADMFixture(t, 83, smallADMConfig(1), onnx.ADMGRUOp)
	p := f.pol
	obs := make([]float32, 2*f.obsDim)
	out := make([]float32, 2*f.actDim)
	obs[f.obsDim+3] = float32(math.NaN())
	wantErr(t, "NaN observation", p.Act(obs, nil, out), "observation 1 value 3", "NaN")
	obs[f.obsDim+3] = float32(math.Inf(-1))
	wantErr(t, "Inf observation", p.Act(obs, nil, out), "observation 1 value 3", "Inf")
	obs[f.obsDim+3] = 0
	wantErr(t, "ragged obs", p.Act(obs[:7], nil, out), "obs_dim 5")
	wantErr(t, "no obs", p.Act(nil, nil, out), "obs_dim 5")
	wantErr(t, "short out", p.Act(obs, nil, out[:3]), "output has 3 values, want 4")
	wantErr(t, "short noise", p.Act(obs, make([]float32, 3), out), "noise has 3 values, want 4")
}

// TestOpenRejectsBadModels checks that corrupt, truncated and mismatched
// ONNX files fail with errors, never a crash.
func TestOpenRejectsBadModels(t *testing.T) {
	f := newADMFixture(t, 84, smallADMConfig(2), onnx.ADMGRUOp)
	garbage := make([]byte, 4096)
	rand.New(rand.NewSource(1)).Read(garbage)
	bad := map[string][]byte{
		"empty":     nil,
		"garbage":   garbage,
		"truncated": f.admONNX[:len(f.admONNX)/2],
		"text":      []byte("this is not an ONNX model"),
	}
	// A model whose bytes were flipped in the middle of the weights still
	// parses; flip the first bytes (the header) instead.
	corrupt := append([]byte(nil), f.actorONNX...)
	for i := 0; i < 16; i++ {
		corrupt[i] ^= 0xA5
	}
	bad["corrupt-header"] = corrupt
	for name, b := range bad {
		_, err := infer.Open(b, []string{schema.Obs}, []string{schema.NextObsMean}, testOpts)
		wantErr(t, "Open "+name, err, "infer:")
		_, err = infer.OpenPolicy(b, testOpts)
		wantErr(t, "OpenPolicy "+name, err, "policy")
		_, err = infer.OpenADMDirect(b, testOpts)
		wantErr(t, "OpenADMDirect "+name, err, "ADM")
		_, err = infer.OpenADMIncremental(b, testOpts)
		wantErr(t, "OpenADMIncremental "+name, err, "ADM step")
		_, err = infer.OpenEnsemble(b, testOpts)
		wantErr(t, "OpenEnsemble "+name, err, "ensemble")
	}

	// Models that load but lack a required input or output.
	critic := models.NewCritic(f.obsDim, f.actDim, []int{8}, rand.New(rand.NewSource(2)))
	cb, err := onnx.ExportCritic(critic, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = infer.OpenPolicy(cb, testOpts)
	wantErr(t, "critic as policy", err, fmt.Sprintf("no input %q", schema.Noise))
	_, err = infer.OpenADMDirect(f.stepONNX, testOpts)
	wantErr(t, "step graph as direct ADM", err, fmt.Sprintf("no input %q", schema.Actions))
	_, err = infer.OpenADMIncremental(f.admONNX, testOpts)
	wantErr(t, "direct graph as step ADM", err, fmt.Sprintf("no input %q", schema.Hidden))
	_, err = infer.OpenEnsemble(f.actorONNX, testOpts)
	wantErr(t, "actor as ensemble", err, fmt.Sprintf("no input %q", schema.Act))
	_, err = infer.Open(f.actorONNX, schema.Actor().Inputs, []string{schema.Q}, testOpts)
	wantErr(t, "missing output", err, fmt.Sprintf("no output %q", schema.Q))
}

// TestProviders checks the execution-provider option: "cuda" on this
// CPU-only ONNX Runtime must fail with a message about CUDA (naming the
// admpo_cuda tag and `make setup-gpu` in a build without the tag; or, with
// a GPU, work), and an unknown provider is refused.
func TestProviders(t *testing.T) {
	f := newADMFixture(t, 85, smallADMConfig(1), onnx.ADMGRUOp)
	p, err := infer.OpenPolicy(f.actorONNX, infer.Options{Provider: "cuda", Threads: 1})
	if err == nil {
		// A CUDA build of ONNX Runtime with a GPU: the policy must work.
		defer p.Close()
		out := make([]float32, f.actDim)
		if err := p.Act(make([]float32, f.obsDim), nil, out); err != nil {
			t.Fatalf("CUDA policy: %v", err)
		}
		t.Log("ONNX Runtime has a working CUDA provider here")
	} else {
		wantErr(t, "cuda provider", err, "CUDA")
		if !infer.CUDABuilt { // the error names the build tag and the setup step
			wantErr(t, "cuda provider without the tag", err, "admpo_cuda")
			wantErr(t, "cuda provider without the tag", err, "make setup-gpu")
		}
	}
	_, err = infer.OpenADMDirect(f.admONNX, infer.Options{Provider: "tpu"})
	wantErr(t, "unknown provider", err, `unknown provider "tpu"`)
	for _, prov := range []string{"", "cpu", "CPU"} {
		d, err := infer.OpenADMDirect(f.admONNX, infer.Options{Provider: prov, Threads: 1})
		if err != nil {
			t.Fatalf("provider %q: %v", prov, err)
		}
		if d.M() != 1 {
			t.Fatalf("provider %q: M() = %d, want 1", prov, d.M())
		}
		d.Close()
	}
}
