package models

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ckpt"
)

func TestADMCheckpointRoundTripIsExact(t *testing.T) {
	m := randomADM(t, ADMConfig{ObsDim: 4, ActDim: 2, Hidden: 8, Layers: 2, ResBlocks: 3, M: 3}, 31)
	p := filepath.Join(t.TempDir(), "adm.ckpt")
	if err := SaveADM(p, m); err != nil {
		t.Fatal(err)
	}
	got, _, err := LoadADM(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatal("loaded ADM differs from the saved one")
	}
	// Into an existing model of the same architecture: its slices are reused.
	dst := randomADM(t, m.Cfg, 32)
	wi := &dst.GRU[1].Wi[0]
	f, err := ckpt.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := GetADMInto(f, "adm", dst); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dst, m) || &dst.GRU[1].Wi[0] != wi {
		t.Fatal("GetADMInto did not copy the weights into the existing slices")
	}
}

func TestDamagedCheckpointsAreRefused(t *testing.T) {
	m := randomADM(t, ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 6, Layers: 1, ResBlocks: 1, M: 2}, 33)
	dir := t.TempDir()
	p := filepath.Join(dir, "adm.ckpt")
	if err := SaveADM(p, m); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.ckpt")
	for _, cut := range []int{0, 10, len(good) / 2, len(good) - 1} {
		os.WriteFile(bad, good[:cut], 0o644)
		if _, _, err := LoadADM(bad); err == nil {
			t.Errorf("file truncated to %d of %d bytes was accepted", cut, len(good))
		}
	}
	for _, at := range []int{20, len(good) / 3, len(good) - 20} {
		flipped := append([]byte(nil), good...)
		flipped[at] ^= 0x04
		os.WriteFile(bad, flipped, 0o644)
		if _, _, err := LoadADM(bad); err == nil {
			t.Errorf("file with a flipped bit at byte %d was accepted", at)
		}
	}
}

func TestWrongArchitectureIsRefused(t *testing.T) {
	small := randomADM(t, ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 6, Layers: 1, ResBlocks: 1, M: 2}, 34)
	f := ckpt.New()
	if err := PutADM(f, "adm", small); err != nil {
		t.Fatal(err)
	}
	big := randomADM(t, ADMConfig{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 1, M: 2}, 35)
	if err := GetADMInto(f, "adm", big); err == nil || !strings.Contains(err.Error(), "config") {
		t.Errorf("loading a 6-wide ADM into an 8-wide one: %v", err)
	}
	if _, err := GetEnsemble(f, "adm"); err == nil || !strings.Contains(err.Error(), `"adm"`) {
		t.Errorf("loading an ADM as an ensemble: %v", err)
	}
	// A header whose config does not match its tensors (tensors of the
	// 6-wide model, config of the 8-wide one).
	g := ckpt.New()
	if err := PutADM(g, "adm", small); err != nil {
		t.Fatal(err)
	}
	h := ckpt.New()
	if err := PutADM(h, "adm", big); err != nil {
		t.Fatal(err)
	}
	hb, _ := h.Bytes("adm/header")
	g.PutBytes("adm/header", hb)
	if _, err := GetADM(ckpt.New(), "adm"); err == nil {
		t.Error("empty file accepted")
	}
	if _, err := GetADM(g, "adm"); err == nil {
		t.Error("tensors of another size accepted")
	}
}

func TestOtherModelCheckpoints(t *testing.T) {
	rng := rand.New(rand.NewSource(36))
	e := NewEnsemble(4, 2, 3, []int{8, 8}, rng)
	e.Elites = []int{2, 0}
	for i := range e.Norm.Mean {
		e.Norm.Mean[i], e.Norm.Std[i] = float32(i), float32(i+1)
	}
	e.Bounds[1].Max[0] = 0.25
	a := NewActor(4, []float64{-1, -2}, []float64{1, 3}, []int{8, 8}, rng)
	c := NewCritic(4, 2, []int{8, 8}, rng)
	f := ckpt.New()
	for _, err := range []error{PutEnsemble(f, "ens", e), PutActor(f, "actor", a), PutCritic(f, "critic", c)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "all.ckpt")
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	g, err := ckpt.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := GetEnsemble(g, "ens")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := GetActor(g, "actor")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := GetCritic(g, "critic")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e2, e) || !reflect.DeepEqual(a2, a) || !reflect.DeepEqual(c2, c) {
		t.Fatal("a loaded model differs from the saved one")
	}
	if _, err := GetCritic(g, "actor"); err == nil {
		t.Error("actor loaded as a critic")
	}
}
