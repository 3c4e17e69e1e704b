package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	f := newFixture(t, 1, 5, 3, 4)
	dir := writeTestBundle(t, f, true)
	got, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Expected manifest, built by hand from what the fixture is.
	hexsum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	want := Manifest{
		Format: 1, Task: testTask, Algorithm: "admpo-on", ObsDim: 5, ActDim: 3,
		ObsLow: infs(5, -1), ObsHigh: infs(5, 1), ActLow: f.low, ActHigh: f.high,
		Normalizers: map[string]Normalizer{"adm": {Mean: f.adm.Norm.Mean, Std: f.adm.Norm.Std}},
		M:           4,
		Calibration: &Calibration{Samples: 1000, Quantiles: []Quantile{{50, 0.1}, {95, 0.3}, {99, 0.5}}},
		Provenance:  map[string]string{"seed": "7", "commit": "abc123"},
		Files: map[string]FileSum{
			PolicyFile: {SHA256: hexsum(f.policy), Bytes: int64(len(f.policy))},
			ADMFile:    {SHA256: hexsum(f.admBytes), Bytes: int64(len(f.admBytes))},
		},
	}
	if !reflect.DeepEqual(got.Manifest, want) {
		a, _ := json.Marshal(got.Manifest)
		b, _ := json.Marshal(want)
		t.Fatalf("manifest round trip:\n got %s\nwant %s", a, b)
	}
	if !reflect.DeepEqual(got.Policy, f.policy) || !reflect.DeepEqual(got.ADM, f.admBytes) {
		t.Fatal("model bytes changed in the round trip")
	}
	// The JSON spells infinities as strings and lists exactly the expected files.
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"obs_low": [`) || !strings.Contains(string(raw), `"-inf"`) {
		t.Fatalf("manifest does not spell -inf as a string:\n%s", raw)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{ADMFile, ManifestFile, PolicyFile}) {
		t.Fatalf("bundle files %v", names)
	}
	// Open also accepts the manifest's path; a bundle without ADM has no m.
	if _, err := ReadBundle(filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	b2, err := ReadBundle(writeTestBundle(t, f, false))
	if err != nil {
		t.Fatal(err)
	}
	if b2.ADM != nil || b2.Manifest.M != 0 || b2.Manifest.HasADM() || len(b2.Manifest.Files) != 1 {
		t.Fatalf("bundle without ADM: %+v", b2.Manifest)
	}
}

func TestFloatsJSON(t *testing.T) {
	in := Floats{1.5, math.Inf(1), math.Inf(-1), -0.25}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `[1.5,"inf","-inf",-0.25]` {
		t.Fatalf("got %s", b)
	}
	var out Floats
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip %v %v", out, err)
	}
	if _, err := json.Marshal(Floats{math.NaN()}); err == nil {
		t.Fatal("NaN encoded")
	}
	if err := json.Unmarshal([]byte(`["nan"]`), &out); err == nil {
		t.Fatal(`"nan" decoded`)
	}
}

func TestWriteBundleRefusals(t *testing.T) {
	f := newFixture(t, 2, 4, 2, 3)
	root := t.TempDir()
	// A non-empty target is refused and left alone.
	full := filepath.Join(root, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o644)
	if err := WriteBundle(full, f.bundle(true)); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("non-empty target: %v", err)
	}
	// An empty directory is replaced.
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	if err := WriteBundle(empty, f.bundle(true)); err != nil {
		t.Fatal(err)
	}
	// A manifest that contradicts the model writes nothing at all.
	bad := f.bundle(true)
	bad.Manifest.ObsDim = 7
	bad.Manifest.ObsLow, bad.Manifest.ObsHigh = nil, nil
	if err := WriteBundle(filepath.Join(root, "bad"), bad); err == nil || !strings.Contains(err.Error(), "obs_dim=4") {
		t.Fatalf("mismatched dims: %v", err)
	}
	bad = f.bundle(true)
	bad.Manifest.ActHigh = append(Floats(nil), f.high...)
	bad.Manifest.ActHigh[1] += 1
	if err := WriteBundle(filepath.Join(root, "bad"), bad); err == nil || !strings.Contains(err.Error(), "squashes action 1") {
		t.Fatalf("mismatched bounds: %v", err)
	}
	bad = f.bundle(true)
	bad.Policy = f.admBytes
	if err := WriteBundle(filepath.Join(root, "bad"), bad); err == nil || !strings.Contains(err.Error(), "no input") {
		t.Fatalf("ADM as policy: %v", err)
	}
	ents, _ := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{"empty", "full"}) {
		t.Fatalf("left behind: %v (want no temporary or partial bundles)", names)
	}
}

// TestTamperedBundleRefused edits a good bundle on disk in many ways and
// expects ReadBundle and Open to refuse each with a specific message.
func TestTamperedBundleRefused(t *testing.T) {
	f := newFixture(t, 3, 5, 3, 4)
	good := writeTestBundle(t, f, true)
	editManifest := func(edit func(m map[string]any)) func(dir string) {
		return func(dir string) {
			p := filepath.Join(dir, ManifestFile)
			var m map[string]any
			b, _ := os.ReadFile(p)
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			b, _ = json.Marshal(m)
			os.WriteFile(p, b, 0o644)
		}
	}
	resum := func(m map[string]any, dir, name string) {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		h := sha256.Sum256(b)
		m["files"].(map[string]any)[name] = map[string]any{"sha256": hex.EncodeToString(h[:]), "bytes": len(b)}
	}
	cases := []struct {
		name, want string
		tamper     func(dir string)
	}{
		{"flipped byte in policy", "policy.onnx does not match the manifest", func(dir string) {
			p := filepath.Join(dir, PolicyFile)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"truncated adm", "adm.onnx does not match the manifest", func(dir string) {
			p := filepath.Join(dir, ADMFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o644)
		}},
		{"missing adm", "adm.onnx", func(dir string) { os.Remove(filepath.Join(dir, ADMFile)) }},
		{"missing manifest", "manifest.json", func(dir string) { os.Remove(filepath.Join(dir, ManifestFile)) }},
		{"unlisted adm", "present but the manifest does not list it", editManifest(func(m map[string]any) {
			delete(m["files"].(map[string]any), ADMFile)
			delete(m, "calibration")
			m["m"] = 0
		})},
		{"obs_dim edited", "obs_dim=5", editManifest(func(m map[string]any) {
			m["obs_dim"] = 6
			m["obs_low"] = []any{0, 0, 0, 0, 0, 0}
			m["obs_high"] = []any{1, 1, 1, 1, 1, 1}
		})},
		{"act bounds edited", "squashes action 0", editManifest(func(m map[string]any) {
			m["act_low"].([]any)[0] = -5.0
		})},
		{"act_high beyond float32", "act_high 1 is 1e+39, beyond float32", editManifest(func(m map[string]any) {
			m["act_high"].([]any)[1] = 1e39
		})},
		{"act_low beyond float32", "act_low 0 is -4e+38, beyond float32", editManifest(func(m map[string]any) {
			m["act_low"].([]any)[0] = -4e38
		})},
		{"act bounds equal in float32", "equal in float32", editManifest(func(m map[string]any) {
			m["act_low"].([]any)[2] = 1.0
			m["act_high"].([]any)[2] = 1.00000001
		})},
		{"m edited", "m=", editManifest(func(m map[string]any) { m["m"] = 3 })},
		{"task edited", "exported for task", editManifest(func(m map[string]any) { m["task"] = "other" })},
		{"normaliser edited", "normaliser differs", editManifest(func(m map[string]any) {
			m["normalizers"].(map[string]any)["adm"].(map[string]any)["std"].([]any)[0] = 9.0
		})},
		{"newer format", "newer than this admpo reads", editManifest(func(m map[string]any) { m["format"] = 2 })},
		{"unknown field", "unknown field", editManifest(func(m map[string]any) { m["surprise"] = 1 })},
		{"bad calibration", "out of order", editManifest(func(m map[string]any) {
			m["calibration"].(map[string]any)["quantiles"].([]any)[0].(map[string]any)["u"] = 9.0
		})},
		{"models swapped, sums fixed", "no input \"noise\"", func(dir string) {
			pp, ap := filepath.Join(dir, PolicyFile), filepath.Join(dir, ADMFile)
			pb, _ := os.ReadFile(pp)
			ab, _ := os.ReadFile(ap)
			os.WriteFile(pp, ab, 0o644)
			os.WriteFile(ap, pb, 0o644)
			editManifest(func(m map[string]any) { resum(m, dir, PolicyFile); resum(m, dir, ADMFile) })(dir)
		}},
		{"garbage model, sum fixed", "not an ONNX model", func(dir string) {
			os.WriteFile(filepath.Join(dir, PolicyFile), []byte{0xff, 0xff, 0xff}, 0o644)
			editManifest(func(m map[string]any) { resum(m, dir, PolicyFile) })(dir)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			copyDir(t, good, dir)
			if _, err := ReadBundle(dir); err != nil {
				t.Fatalf("untouched copy refused: %v", err)
			}
			c.tamper(dir)
			_, err := ReadBundle(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadBundle: got %v, want an error containing %q", err, c.want)
			}
			if _, err := Open(dir, Options{Runtime: RuntimeGo, NoMonitor: true}); err == nil {
				t.Fatal("Open accepted the tampered bundle")
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
