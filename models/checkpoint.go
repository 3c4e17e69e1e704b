package models

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"

	"github.com/admpo/admpo/internal/ckpt"
)

// Model checkpoints. A model is stored in an internal/ckpt container (magic
// "ADMPOCKP", format version, named sections, CRC-32, end marker, written
// atomically: temp file, fsync, rename) as:
//
//	<prefix>/header    bytes: JSON {"kind", "schema", "config", "tensors"}
//	<prefix>/<tensor>  float32 data, row-major, for every tensor the header lists
//
// "kind" is "adm", "ensemble", "actor" or "critic"; "schema" is
// ModelSchema; "config" is the architecture (ADMConfig for an ADM, sizes
// and activation for the others); "tensors" lists every tensor's name and
// shape in storage order. Normalisers, log-variance bounds and the actor's
// action scaling are tensors like the weights. Loading checks the kind, the
// schema, that the stored tensor list is exactly the one the stored config
// implies, and (for the Into variants) that the config equals the
// destination model's: a checkpoint of another architecture is refused with
// an error that names the difference. The ckpt container refuses truncated
// or corrupted files. Callers may add sections of their own (e.g.
// optimiser moments) to the same file under other names.
//
// ADM tensor names (prefix "adm"): norm/mean, norm/std, gru/<l>/{wi,bi,wh,bh},
// block/<b>/{w,b,gamma,beta}, out/{w,b}, bounds/{max,min}.

// ModelSchema is the version of the model layout inside a checkpoint.
const ModelSchema = 1

// modelHeader is the JSON header of a stored model.
type modelHeader struct {
	Kind    string          `json:"kind"`
	Schema  int             `json:"schema"`
	Config  json.RawMessage `json:"config"`
	Tensors []tensorInfo    `json:"tensors"`
}

type tensorInfo struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// tensorRef is one stored tensor and the slice that holds it.
type tensorRef struct {
	tensorInfo
	data []float32
}

func ref(name string, data []float32, shape ...int) tensorRef {
	return tensorRef{tensorInfo{name, shape}, data}
}

func linearRefs(prefix string, l *Linear) []tensorRef {
	return []tensorRef{ref(prefix+"/w", l.W, l.In, l.Out), ref(prefix+"/b", l.B, l.Out)}
}

func mlpRefs(prefix string, m *MLP) []tensorRef {
	var rs []tensorRef
	for i := range m.Layers {
		rs = append(rs, linearRefs(fmt.Sprintf("%s/%d", prefix, i), &m.Layers[i])...)
	}
	return rs
}

func admRefs(m *ADM) []tensorRef {
	in := len(m.Norm.Mean)
	rs := []tensorRef{ref("norm/mean", m.Norm.Mean, in), ref("norm/std", m.Norm.Std, in)}
	for l := range m.GRU {
		g := &m.GRU[l]
		p := fmt.Sprintf("gru/%d", l)
		rs = append(rs, ref(p+"/wi", g.Wi, g.In, 3*g.Hidden), ref(p+"/bi", g.Bi, 3*g.Hidden),
			ref(p+"/wh", g.Wh, g.Hidden, 3*g.Hidden), ref(p+"/bh", g.Bh, 3*g.Hidden))
	}
	for b := range m.Blocks {
		blk := &m.Blocks[b]
		p := fmt.Sprintf("block/%d", b)
		rs = append(rs, linearRefs(p, &blk.Lin)...)
		rs = append(rs, ref(p+"/gamma", blk.Norm.Gamma, blk.Norm.Dim), ref(p+"/beta", blk.Norm.Beta, blk.Norm.Dim))
	}
	rs = append(rs, linearRefs("out", &m.Out)...)
	d := len(m.Bounds.Max)
	return append(rs, ref("bounds/max", m.Bounds.Max, d), ref("bounds/min", m.Bounds.Min, d))
}

// putModel stores a header and tensors under prefix.
func putModel(f *ckpt.File, prefix, kind string, config any, refs []tensorRef) error {
	cfg, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("models: encoding %s config: %w", kind, err)
	}
	h := modelHeader{Kind: kind, Schema: ModelSchema, Config: cfg}
	for _, r := range refs {
		n := 1
		for _, s := range r.Shape {
			n *= s
		}
		if n != len(r.data) {
			return fmt.Errorf("models: %s tensor %s has %d values for shape %v", kind, r.Name, len(r.data), r.Shape)
		}
		h.Tensors = append(h.Tensors, r.tensorInfo)
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("models: encoding %s header: %w", kind, err)
	}
	f.PutBytes(prefix+"/header", hb)
	for _, r := range refs {
		f.PutF32(prefix+"/"+r.Name, r.data)
	}
	return nil
}

// readHeader reads and checks the header under prefix and decodes its config.
func readHeader(f *ckpt.File, prefix, kind string, config any) (*modelHeader, error) {
	hb, err := f.Bytes(prefix + "/header")
	if err != nil {
		return nil, fmt.Errorf("models: no %s model under %q: %w", kind, prefix, err)
	}
	var h modelHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("models: %s header under %q: %w", kind, prefix, err)
	}
	if h.Kind != kind {
		return nil, fmt.Errorf("models: checkpoint holds a %q model under %q, not %q", h.Kind, prefix, kind)
	}
	if h.Schema != ModelSchema {
		return nil, fmt.Errorf("models: %s model schema %d, this admpo reads schema %d", kind, h.Schema, ModelSchema)
	}
	if err := json.Unmarshal(h.Config, config); err != nil {
		return nil, fmt.Errorf("models: %s config: %w", kind, err)
	}
	return &h, nil
}

// getModel reads the model of kind stored under prefix: it decodes the
// header's config, has build make the model from it and list the model's
// tensors, and copies the stored tensors in.
func getModel[C, M any](f *ckpt.File, prefix, kind string, build func(c C) (M, []tensorRef, error)) (M, error) {
	var c C
	var none M
	h, err := readHeader(f, prefix, kind, &c)
	if err != nil {
		return none, err
	}
	m, refs, err := build(c)
	if err != nil {
		return none, err
	}
	if err := copyTensors(f, prefix, kind, h, refs); err != nil {
		return none, err
	}
	return m, nil
}

// copyTensors checks that the header lists exactly refs and copies the data in.
func copyTensors(f *ckpt.File, prefix, kind string, h *modelHeader, refs []tensorRef) error {
	if len(h.Tensors) != len(refs) {
		return fmt.Errorf("models: %s checkpoint lists %d tensors, its config implies %d", kind, len(h.Tensors), len(refs))
	}
	for i, r := range refs {
		got := h.Tensors[i]
		if got.Name != r.Name || !slices.Equal(got.Shape, r.Shape) {
			return fmt.Errorf("models: %s checkpoint tensor %d is %s%v, want %s%v", kind, i, got.Name, got.Shape, r.Name, r.Shape)
		}
		if err := f.CopyF32(prefix+"/"+r.Name, r.data); err != nil {
			return fmt.Errorf("models: %s: %w", kind, err)
		}
	}
	return nil
}

// PutADM stores m under prefix (e.g. "adm").
func PutADM(f *ckpt.File, prefix string, m *ADM) error {
	if err := m.check(); err != nil {
		return err
	}
	return putModel(f, prefix, "adm", m.Cfg, admRefs(m))
}

// GetADM reads the ADM stored under prefix into a new model.
func GetADM(f *ckpt.File, prefix string) (*ADM, error) {
	return getModel(f, prefix, "adm", func(cfg ADMConfig) (*ADM, []tensorRef, error) {
		m, err := NewADM(cfg, rand.New(rand.NewSource(0)))
		if err != nil {
			return nil, nil, fmt.Errorf("models: stored ADM: %w", err)
		}
		return m, admRefs(m), nil
	})
}

// GetADMInto copies the ADM stored under prefix into m's existing slices
// (which graphs may be backed by); the stored config must equal m.Cfg.
func GetADMInto(f *ckpt.File, prefix string, m *ADM) error {
	_, err := getModel(f, prefix, "adm", func(cfg ADMConfig) (*ADM, []tensorRef, error) {
		if cfg != m.Cfg {
			return nil, nil, fmt.Errorf("models: checkpoint ADM has config %+v, the model %+v", cfg, m.Cfg)
		}
		if err := m.check(); err != nil {
			return nil, nil, err
		}
		return m, admRefs(m), nil
	})
	return err
}

// SaveADM writes m alone to path (sections under "adm").
func SaveADM(path string, m *ADM) error { return saveAlone(path, "adm", "ADM", m, PutADM) }

// LoadADM reads an ADM written by SaveADM. The returned file gives access to
// any other sections stored with it.
func LoadADM(path string) (*ADM, *ckpt.File, error) { return loadAlone(path, "adm", "ADM", GetADM) }

// saveAlone writes v alone to a new checkpoint file at path, stored by put
// under prefix; what names the model in errors.
func saveAlone[T any](path, prefix, what string, v T, put func(*ckpt.File, string, T) error) error {
	f := ckpt.New()
	if err := put(f, prefix, v); err != nil {
		return err
	}
	if err := f.Save(path); err != nil {
		return fmt.Errorf("models: saving %s: %w", what, err)
	}
	return nil
}

// loadAlone reads the checkpoint file at path and the model get finds in it
// under prefix; what names the model in errors.
func loadAlone[T any](path, prefix, what string, get func(*ckpt.File, string) (T, error)) (T, *ckpt.File, error) {
	var zero T
	f, err := ckpt.Load(path)
	if err != nil {
		return zero, nil, fmt.Errorf("models: loading %s: %w", what, err)
	}
	v, err := get(f, prefix)
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, f, nil
}

// mlpConfig is the stored architecture of an MLP.
type mlpConfig struct {
	Sizes      []int  `json:"sizes"`
	Activation string `json:"activation"`
}

func mlpConfigOf(m *MLP) mlpConfig {
	c := mlpConfig{Activation: m.Activation}
	for i, l := range m.Layers {
		if i == 0 {
			c.Sizes = append(c.Sizes, l.In)
		}
		c.Sizes = append(c.Sizes, l.Out)
	}
	return c
}

func (c mlpConfig) equal(o mlpConfig) bool {
	return c.Activation == o.Activation && slices.Equal(c.Sizes, o.Sizes)
}

// ensembleConfig is the stored architecture of an Ensemble.
type ensembleConfig struct {
	ObsDim  int       `json:"obs_dim"`
	ActDim  int       `json:"act_dim"`
	Members int       `json:"members"`
	Net     mlpConfig `json:"net"`
	Elites  []int     `json:"elites"`
}

func ensembleRefs(e *Ensemble) []tensorRef {
	in := len(e.Norm.Mean)
	rs := []tensorRef{ref("norm/mean", e.Norm.Mean, in), ref("norm/std", e.Norm.Std, in)}
	for i := range e.Members {
		p := fmt.Sprintf("member/%d", i)
		rs = append(rs, mlpRefs(p, &e.Members[i])...)
		d := len(e.Bounds[i].Max)
		rs = append(rs, ref(p+"/bounds/max", e.Bounds[i].Max, d), ref(p+"/bounds/min", e.Bounds[i].Min, d))
	}
	return rs
}

func ensembleConfigOf(e *Ensemble) (ensembleConfig, error) {
	if len(e.Members) == 0 || len(e.Bounds) != len(e.Members) {
		return ensembleConfig{}, fmt.Errorf("models: ensemble with %d members and %d bounds", len(e.Members), len(e.Bounds))
	}
	c := ensembleConfig{ObsDim: e.ObsDim, ActDim: e.ActDim, Members: len(e.Members), Net: mlpConfigOf(&e.Members[0]), Elites: e.Elites}
	for i := range e.Members {
		if !mlpConfigOf(&e.Members[i]).equal(c.Net) {
			return c, fmt.Errorf("models: ensemble member %d differs from member 0", i)
		}
	}
	return c, nil
}

// PutEnsemble stores e (members, bounds, normaliser, elites) under prefix.
func PutEnsemble(f *ckpt.File, prefix string, e *Ensemble) error {
	c, err := ensembleConfigOf(e)
	if err != nil {
		return err
	}
	return putModel(f, prefix, "ensemble", c, ensembleRefs(e))
}

// GetEnsemble reads the ensemble stored under prefix into a new one.
func GetEnsemble(f *ckpt.File, prefix string) (*Ensemble, error) {
	return getModel(f, prefix, "ensemble", func(c ensembleConfig) (*Ensemble, []tensorRef, error) {
		n := len(c.Net.Sizes)
		if n < 2 || c.Members <= 0 || c.Net.Sizes[0] != c.ObsDim+c.ActDim || c.Net.Sizes[n-1] != 2*(c.ObsDim+1) {
			return nil, nil, fmt.Errorf("models: stored ensemble config %+v is inconsistent", c)
		}
		e := NewEnsemble(c.ObsDim, c.ActDim, c.Members, c.Net.Sizes[1:n-1], rand.New(rand.NewSource(0)))
		for i := range e.Members {
			e.Members[i].Activation = c.Net.Activation
		}
		for _, el := range c.Elites {
			if el < 0 || el >= c.Members {
				return nil, nil, fmt.Errorf("models: stored ensemble elite %d outside %d members", el, c.Members)
			}
		}
		e.Elites = append([]int(nil), c.Elites...)
		return e, ensembleRefs(e), nil
	})
}

// SaveEnsemble writes e alone to path (sections under "ensemble").
func SaveEnsemble(path string, e *Ensemble) error {
	return saveAlone(path, "ensemble", "ensemble", e, PutEnsemble)
}

// LoadEnsemble reads an ensemble written by SaveEnsemble.
func LoadEnsemble(path string) (*Ensemble, *ckpt.File, error) {
	return loadAlone(path, "ensemble", "ensemble", GetEnsemble)
}

// actorConfig is the stored architecture of an Actor.
type actorConfig struct {
	ObsDim    int       `json:"obs_dim"`
	ActDim    int       `json:"act_dim"`
	Net       mlpConfig `json:"net"`
	LogStdMin float32   `json:"log_std_min"`
	LogStdMax float32   `json:"log_std_max"`
}

// PutActor stores a (network, log-std limits, action scale and bias) under prefix.
func PutActor(f *ckpt.File, prefix string, a *Actor) error {
	c := actorConfig{ObsDim: a.ObsDim, ActDim: a.ActDim, Net: mlpConfigOf(&a.Net), LogStdMin: a.LogStdMin, LogStdMax: a.LogStdMax}
	return putModel(f, prefix, "actor", c, actorRefs(a))
}

// GetActor reads the actor stored under prefix into a new one.
func GetActor(f *ckpt.File, prefix string) (*Actor, error) {
	return getModel(f, prefix, "actor", func(c actorConfig) (*Actor, []tensorRef, error) {
		n := len(c.Net.Sizes)
		if n < 2 || c.ActDim <= 0 || c.Net.Sizes[0] != c.ObsDim || c.Net.Sizes[n-1] != 2*c.ActDim {
			return nil, nil, fmt.Errorf("models: stored actor config %+v is inconsistent", c)
		}
		low, high := make([]float64, c.ActDim), make([]float64, c.ActDim)
		a := NewActor(c.ObsDim, low, high, c.Net.Sizes[1:n-1], rand.New(rand.NewSource(0)))
		a.Net.Activation, a.LogStdMin, a.LogStdMax = c.Net.Activation, c.LogStdMin, c.LogStdMax
		return a, actorRefs(a), nil
	})
}

// actorRefs lists a's stored tensors.
func actorRefs(a *Actor) []tensorRef {
	return append(mlpRefs("net", &a.Net), ref("scale", a.Scale, a.ActDim), ref("bias", a.Bias, a.ActDim))
}

// criticConfig is the stored architecture of a Critic.
type criticConfig struct {
	ObsDim int       `json:"obs_dim"`
	ActDim int       `json:"act_dim"`
	Net    mlpConfig `json:"net"`
}

// PutCritic stores c under prefix.
func PutCritic(f *ckpt.File, prefix string, c *Critic) error {
	cfg := criticConfig{ObsDim: c.ObsDim, ActDim: c.ActDim, Net: mlpConfigOf(&c.Net)}
	return putModel(f, prefix, "critic", cfg, mlpRefs("net", &c.Net))
}

// GetCritic reads the critic stored under prefix into a new one.
func GetCritic(f *ckpt.File, prefix string) (*Critic, error) {
	return getModel(f, prefix, "critic", func(c criticConfig) (*Critic, []tensorRef, error) {
		n := len(c.Net.Sizes)
		if n < 2 || c.Net.Sizes[0] != c.ObsDim+c.ActDim || c.Net.Sizes[n-1] != 1 {
			return nil, nil, fmt.Errorf("models: stored critic config %+v is inconsistent", c)
		}
		cr := NewCritic(c.ObsDim, c.ActDim, c.Net.Sizes[1:n-1], rand.New(rand.NewSource(0)))
		cr.Net.Activation = c.Net.Activation
		return cr, mlpRefs("net", &cr.Net), nil
	})
}
