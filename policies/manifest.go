package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// FormatVersion is the bundle format this package writes and reads.
const FormatVersion = 1

// Bundle file names.
const (
	PolicyFile   = "policy.onnx"
	ADMFile      = "adm.onnx"
	ManifestFile = "manifest.json"
)

// Manifest describes a bundle (manifest.json).
type Manifest struct {
	// Format is FormatVersion; Open refuses other values.
	Format int `json:"format"`
	// Task is the environment or data set the policy was trained on.
	Task string `json:"task"`
	// Algorithm is the training algorithm and setting, e.g. "admpo-on",
	// "sac-on", "admpo-off" or "bc-off".
	Algorithm string `json:"algorithm"`
	// RunKind is the kind of run the policy comes from: RunOnline,
	// RunOffline or RunOwnData; "" when unknown (bundles written before
	// the key).
	RunKind string `json:"run_kind,omitempty"`
	// ObsDim and ActDim must match the ONNX models' metadata.
	ObsDim int `json:"obs_dim"`
	ActDim int `json:"act_dim"`
	// ObsLow and ObsHigh are the observation bounds (may be ±Inf, written
	// as "-inf"/"inf"); informational, empty when unknown.
	ObsLow  Floats `json:"obs_low,omitempty"`
	ObsHigh Floats `json:"obs_high,omitempty"`
	// ActLow and ActHigh are the action bounds; the actor squashes its
	// actions into them (Open checks its action_scale/action_bias).
	ActLow  Floats `json:"act_low"`
	ActHigh Floats `json:"act_high"`
	// Normalizers are named input normalisers, e.g. "adm" for the ADM's
	// z-scoring of [obs, act] (Open checks it against adm.onnx).
	Normalizers map[string]Normalizer `json:"normalizers,omitempty"`
	// M is the ADM's maximum backtracking length (0 without adm.onnx).
	M int `json:"m"`
	// Calibration is the distribution of U^ADM on training data; nil when
	// there is no ADM or it was not measured.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Provenance is free-form training information (commit, seed, steps,
	// return, date...).
	Provenance map[string]string `json:"provenance,omitempty"`
	// Files maps each bundle file (policy.onnx, adm.onnx) to its checksum.
	Files map[string]FileSum `json:"files"`
}

// Run kinds (Manifest.RunKind).
const (
	RunOnline  = "online"           // trained by interacting with a simulator
	RunOffline = "offline"          // trained on a task's fixed data set
	RunOwnData = "offline-own-data" // trained on a data set without a task
)

// Normalizer z-scores an input: (x - Mean) / Std.
type Normalizer struct {
	Mean []float32 `json:"mean"`
	Std  []float32 `json:"std"`
}

// FileSum is a bundle file's size and lowercase hex sha256.
type FileSum struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// HasADM tells whether the manifest lists adm.onnx.
func (m *Manifest) HasADM() bool {
	_, ok := m.Files[ADMFile]
	return ok
}

// Validate checks the manifest on its own (not against the files).
func (m *Manifest) Validate() error {
	if m.Format != FormatVersion {
		if m.Format > FormatVersion {
			return fmt.Errorf("policies: manifest format %d is newer than this admpo reads (%d): upgrade admpo", m.Format, FormatVersion)
		}
		return fmt.Errorf("policies: manifest format %d is not supported (want %d)", m.Format, FormatVersion)
	}
	switch m.RunKind {
	case "", RunOnline, RunOffline, RunOwnData:
	default:
		return fmt.Errorf("policies: manifest run_kind %q is not one of %q, %q, %q", m.RunKind, RunOnline, RunOffline, RunOwnData)
	}
	if m.ObsDim <= 0 || m.ActDim <= 0 {
		return fmt.Errorf("policies: manifest obs_dim=%d act_dim=%d must be positive", m.ObsDim, m.ActDim)
	}
	if len(m.ActLow) != m.ActDim || len(m.ActHigh) != m.ActDim {
		return fmt.Errorf("policies: manifest act_low/act_high have %d/%d values, want act_dim=%d", len(m.ActLow), len(m.ActHigh), m.ActDim)
	}
	for i := range m.ActLow {
		l, h := m.ActLow[i], m.ActHigh[i]
		if math.IsInf(l, 0) || math.IsInf(h, 0) || !(l < h) {
			return fmt.Errorf("policies: manifest action bound %d is [%v, %v]: want finite low < high", i, l, h)
		}
		// The models compute in float32: a bound it cannot hold would
		// become ±Inf there, and bounds that round to one value leave no
		// range.
		for _, b := range []struct {
			name string
			v    float64
		}{{"act_low", l}, {"act_high", h}} {
			if math.Abs(b.v) > math.MaxFloat32 {
				return fmt.Errorf("policies: manifest %s %d is %v, beyond float32 (|x| <= %g)", b.name, i, b.v, math.MaxFloat32)
			}
		}
		if float32(l) == float32(h) {
			return fmt.Errorf("policies: manifest action bound %d is [%v, %v]: low and high are equal in float32", i, l, h)
		}
	}
	if (len(m.ObsLow) != 0 || len(m.ObsHigh) != 0) && (len(m.ObsLow) != m.ObsDim || len(m.ObsHigh) != m.ObsDim) {
		return fmt.Errorf("policies: manifest obs_low/obs_high have %d/%d values, want obs_dim=%d or none", len(m.ObsLow), len(m.ObsHigh), m.ObsDim)
	}
	for i := range m.ObsLow {
		if m.ObsLow[i] > m.ObsHigh[i] {
			return fmt.Errorf("policies: manifest observation bound %d is [%v, %v]: low > high", i, m.ObsLow[i], m.ObsHigh[i])
		}
	}
	for name, n := range m.Normalizers {
		if len(n.Mean) == 0 || len(n.Mean) != len(n.Std) {
			return fmt.Errorf("policies: manifest normaliser %q has %d means and %d stds", name, len(n.Mean), len(n.Std))
		}
		for i, s := range n.Std {
			if !(s > 0) || math.IsInf(float64(s), 0) || math.IsNaN(float64(n.Mean[i])) || math.IsInf(float64(n.Mean[i]), 0) {
				return fmt.Errorf("policies: manifest normaliser %q entry %d: mean %v, std %v (want finite, std > 0)", name, i, n.Mean[i], s)
			}
		}
	}
	if _, ok := m.Files[PolicyFile]; !ok {
		return fmt.Errorf("policies: manifest lists no %s", PolicyFile)
	}
	for name, f := range m.Files {
		if name != PolicyFile && name != ADMFile {
			return fmt.Errorf("policies: manifest lists unknown file %q", name)
		}
		if len(f.SHA256) != 64 || f.Bytes <= 0 {
			return fmt.Errorf("policies: manifest entry for %s: sha256 %q, %d bytes (want 64 hex digits and a positive size)", name, f.SHA256, f.Bytes)
		}
	}
	if m.HasADM() {
		if m.M <= 0 {
			return fmt.Errorf("policies: manifest m=%d must be positive when %s is present", m.M, ADMFile)
		}
	} else if m.M != 0 || m.Calibration != nil {
		return fmt.Errorf("policies: manifest has m=%d or a U^ADM calibration but no %s", m.M, ADMFile)
	}
	if m.Calibration != nil {
		if err := m.Calibration.Validate(); err != nil {
			return err
		}
		if r := m.Calibration.Range; r != nil {
			if err := r.validate(m.ObsDim); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarshalManifest encodes m as indented JSON.
func MarshalManifest(m *Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("policies: encoding manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// UnmarshalManifest decodes and validates manifest.json. Unknown fields are
// refused so that a newer or mistyped manifest is not half-read.
func UnmarshalManifest(b []byte) (*Manifest, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var m Manifest
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("policies: reading manifest: %w", err)
	}
	if d.More() {
		return nil, errors.New("policies: reading manifest: data after the JSON object")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Floats is a []float64 whose JSON form writes ±Inf as "inf"/"-inf"
// (JSON numbers cannot); NaN is refused.
type Floats []float64

// MarshalJSON implements json.Marshaler.
func (f Floats) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	b := []byte{'['}
	for i, x := range f {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(x):
			return nil, fmt.Errorf("value %d is NaN", i)
		case math.IsInf(x, 1):
			b = append(b, `"inf"`...)
		case math.IsInf(x, -1):
			b = append(b, `"-inf"`...)
		default:
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Floats) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*f = nil
		return nil
	}
	out := make(Floats, len(raw))
	for i, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			switch s {
			case "inf", "+inf":
				out[i] = math.Inf(1)
			case "-inf":
				out[i] = math.Inf(-1)
			default:
				return fmt.Errorf("value %d is %q (want a number, \"inf\" or \"-inf\")", i, s)
			}
			continue
		}
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return fmt.Errorf("value %d: %w", i, err)
		}
	}
	*f = out
	return nil
}
