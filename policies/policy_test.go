package policies

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx/schema"
	"github.com/admpo/admpo/policies/goruntime"
)

// TestActorBackendsMatchReference runs the exported actor on both runtimes
// with explicit noise and compares each with the float64 reference and
// with each other, over batch sizes 1, act_dim, powers of two and odd
// sizes, and repeated runs of the same compiled model.
func TestActorBackendsMatchReference(t *testing.T) {
	ortskip.IfMissing(t)
	const od, ad = 6, 4
	f := newFixture(t, 11, od, ad, 3)
	info, err := Inspect(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	ort, err := newActor(RuntimeORT, f.policy, info, od, ad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ort.close()
	gort, err := newActor(RuntimeGo, f.policy, info, od, ad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gort.close()
	rng := rand.New(rand.NewSource(5))
	for _, n := range []int{1, 1, 1, 2, 3, ad, 5, 64, 1, 70, ad, 1} {
		obs := testfix.RandNormal(rng, n*od)
		for i := range obs {
			obs[i] *= 2
		}
		for _, stochastic := range []bool{false, true} {
			var noise []float32
			if stochastic {
				noise = testfix.RandNormal(rng, n*ad)
			}
			a1 := make([]float32, n*ad)
			a2 := make([]float32, n*ad)
			if err := ort.act(obs, noise, a1); err != nil {
				t.Fatal(err)
			}
			if err := gort.act(obs, noise, a2); err != nil {
				t.Fatal(err)
			}
			var ref []float64
			for r := 0; r < n; r++ {
				var nz []float32
				if noise != nil {
					nz = noise[r*ad : (r+1)*ad]
				}
				ref = append(ref, testfix.RefActor(f.actor, obs[r*od:(r+1)*od], nz)...)
			}
			dOrt, dGo := testfix.MaxDiff(a1, ref), testfix.MaxDiff(a2, ref)
			var dBoth float64
			for i := range a1 {
				dBoth = math.Max(dBoth, math.Abs(float64(a1[i]-a2[i])))
			}
			if dOrt > 1e-5 || dGo > 1e-5 || dBoth > 1e-5 {
				t.Fatalf("n=%d stochastic=%v: |ort-ref|=%g |go-ref|=%g |ort-go|=%g (want <= 1e-5)", n, stochastic, dOrt, dGo, dBoth)
			}
			// The actions must actually depend on the observation.
			if n >= 2 && slices.Equal(a1[:ad], a1[ad:2*ad]) {
				t.Fatal("two observations gave identical actions")
			}
		}
	}
}

func TestExportedActorRunsOnGoRuntime(t *testing.T) {
	f := newFixture(t, 12, 3, 2, 2)
	info, err := Inspect(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	// The exporter documents exactly these ops for the actor.
	want := []string{"Add", "Exp", "Gemm", "Identity", "Mul", "Relu", "Tanh"}
	if !slices.Equal(info.Ops, want) {
		t.Fatalf("actor ops %v, want %v", info.Ops, want)
	}
	if bad := goruntime.Unsupported(info.Ops); len(bad) != 0 {
		t.Fatalf("pure-Go runtime lacks %v", bad)
	}
	// The ADM uses ops onnx-go lacks; the Go runtime names them.
	ai, err := Inspect(f.admBytes)
	if err != nil {
		t.Fatal(err)
	}
	bad := goruntime.Unsupported(ai.Ops)
	if !slices.Contains(bad, "Gather") || slices.Contains(bad, "Gemm") {
		t.Fatalf("ADM unsupported ops %v, want Gather among them and not Gemm (ops %v)", bad, ai.Ops)
	}
	_, err = newActor(RuntimeGo, f.admBytes, ai, 3, 2, Options{})
	if err == nil || !strings.Contains(err.Error(), "Gather") {
		t.Fatalf("Go runtime on the ADM: %v", err)
	}
	if _, err := newActor("tpu", f.policy, info, 3, 2, Options{}); err == nil || !strings.Contains(err.Error(), "unknown runtime") {
		t.Fatalf("unknown runtime: %v", err)
	}
}

func TestInspect(t *testing.T) {
	f := newFixture(t, 13, 3, 2, 2)
	info, err := Inspect(f.policy)
	if err != nil {
		t.Fatal(err)
	}
	if sig := schema.Actor(); !slices.Equal(info.Inputs, sig.Inputs) || !slices.Equal(info.Outputs, sig.Outputs) {
		t.Fatalf("io %v -> %v", info.Inputs, info.Outputs)
	}
	md := info.Metadata
	if md[schema.MetaTask] != testTask || md[schema.MetaModel] != schema.KindActor || md[schema.MetaObsDim] != "3" || md[schema.MetaActDim] != "2" {
		t.Fatalf("metadata %v", md)
	}
	// Garbage and truncations fail cleanly, never panic.
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		b := append([]byte(nil), f.policy[:rng.Intn(len(f.policy))]...)
		if len(b) > 0 && i%2 == 0 {
			b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
		}
		Inspect(b)
	}
	if _, err := Inspect([]byte("not a model at all")); err == nil {
		t.Fatal("text accepted as a model")
	}
}

// TestPolicyAct checks Act/ActBatch (deterministic by default) and seeded
// sampling against the reference with noise drawn independently from the
// same seed.
func TestPolicyAct(t *testing.T) {
	ortskip.IfMissing(t)
	const od, ad = 5, 3
	f := newFixture(t, 14, od, ad, 3)
	rng := rand.New(rand.NewSource(9))
	for _, rt := range []string{RuntimeORT, RuntimeGo} {
		p := openTestPolicy(t, f, false, Options{Runtime: rt})
		if p.Runtime() != rt {
			t.Fatalf("runtime %q", p.Runtime())
		}
		obs := testfix.RandNormal(rng, od)
		a, err := p.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		if d := testfix.MaxDiff(a, testfix.RefActor(f.actor, obs, nil)); d > 1e-5 {
			t.Fatalf("%s Act: diff %g", rt, d)
		}
		batch := [][]float32{testfix.RandNormal(rng, od), testfix.RandNormal(rng, od), obs}
		acts, err := p.ActBatch(batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range batch {
			if d := testfix.MaxDiff(acts[i], testfix.RefActor(f.actor, o, nil)); d > 1e-5 {
				t.Fatalf("%s ActBatch row %d: diff %g", rt, i, d)
			}
		}
		// Stochastic: noise is NormFloat64 from rand.NewSource(Seed), in order.
		ps := openTestPolicy(t, f, false, Options{Runtime: rt, Stochastic: true, Seed: 42})
		nr := rand.New(rand.NewSource(42))
		for step := 0; step < 3; step++ {
			a, err := ps.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			noise := make([]float32, ad)
			for i := range noise {
				noise[i] = float32(nr.NormFloat64())
			}
			if d := testfix.MaxDiff(a, testfix.RefActor(f.actor, obs, noise)); d > 1e-5 {
				t.Fatalf("%s stochastic step %d: diff %g", rt, step, d)
			}
		}
		// Within the action bounds.
		for _, v := range acts {
			for j, x := range v {
				if float64(x) < f.low[j] || float64(x) > f.high[j] {
					t.Fatalf("action %v outside [%v, %v]", x, f.low[j], f.high[j])
				}
			}
		}
		// Input errors.
		if _, err := p.Act(obs[:od-1]); err == nil || !strings.Contains(err.Error(), "obs_dim=5") {
			t.Fatalf("short obs: %v", err)
		}
		bad := slices.Clone(obs)
		bad[2] = float32(math.NaN())
		if _, err := p.Act(bad); err == nil || !strings.Contains(err.Error(), "NaN") {
			t.Fatalf("NaN obs: %v", err)
		}
		bad[2] = float32(math.Inf(-1))
		if _, err := p.ActBatch([][]float32{obs, bad}); err == nil || !strings.Contains(err.Error(), "observation 1 value 2") {
			t.Fatalf("Inf obs: %v", err)
		}
		if _, err := p.ActBatch([][]float32{obs, obs[:2]}); err == nil {
			t.Fatal("ragged batch accepted")
		}
		if _, err := p.ActBatch(nil); err == nil {
			t.Fatal("empty batch accepted")
		}
		if _, err := p.Monitor(); err == nil || !strings.Contains(err.Error(), "no adm.onnx") {
			t.Fatalf("monitor without ADM: %v", err)
		}
		p.Close()
		if _, err := p.Act(obs); !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	}
}

// TestPolicyConcurrent hammers one policy from many goroutines (run with
// -race) and checks every action against the reference.
func TestPolicyConcurrent(t *testing.T) {
	ortskip.IfMissing(t)
	const od, ad = 4, 2
	f := newFixture(t, 15, od, ad, 2)
	for _, rt := range []string{RuntimeORT, RuntimeGo} {
		p := openTestPolicy(t, f, false, Options{Runtime: rt, Sessions: 3})
		testfix.Concurrently(t, 8, func(g int) error {
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 40; i++ {
				n := 1 + rng.Intn(4)
				obs := make([][]float32, n)
				for r := range obs {
					obs[r] = testfix.RandNormal(rng, od)
				}
				acts, err := p.ActBatch(obs)
				if err != nil {
					return err
				}
				for r := range obs {
					if d := testfix.MaxDiff(acts[r], testfix.RefActor(f.actor, obs[r], nil)); d > 1e-5 {
						return errors.New(rt + ": concurrent result differs from the reference")
					}
				}
			}
			return nil
		})
	}
}
