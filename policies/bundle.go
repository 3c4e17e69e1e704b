package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/regfile"
	"github.com/admpo/admpo/onnx/schema"
)

// maxFileBytes bounds every file a bundle may hold (models of the paper's
// sizes are a few MB).
const maxFileBytes = 1 << 30

// maxManifestBytes bounds manifest.json.
const maxManifestBytes = 16 << 20

// Bundle is a bundle's content in memory.
type Bundle struct {
	Manifest Manifest
	Policy   []byte // policy.onnx
	ADM      []byte // adm.onnx; nil when the bundle has none

	digest string // sha256 of manifest.json as read (ReadBundle)
}

// Digest is the bundle's identity: the lowercase hex sha256 of its
// manifest.json as read from disk (which lists every file's sha256), or of
// the manifest in the form WriteBundle writes (the same for bundles admpo
// wrote) when b was not read from disk.
func (b *Bundle) Digest() string {
	if b.digest != "" {
		return b.digest
	}
	mj, err := MarshalManifest(&b.Manifest)
	if err != nil {
		return ""
	}
	return sum(mj).SHA256
}

// WriteBundle writes b into the directory dir atomically: the files go to a
// temporary directory next to dir, are synced, and the directory is renamed
// into place, so dir either does not appear or holds the whole bundle. dir
// must not exist or be an empty directory.
//
// The manifest's Format, Files and, where zero or missing, ObsDim, ActDim,
// M and the "adm" normaliser are filled from the models; everything else is
// checked against the models' metadata before anything is written.
func WriteBundle(dir string, b Bundle) error {
	m, err := completeManifest(b)
	if err != nil {
		return err
	}
	mj, err := MarshalManifest(m)
	if err != nil {
		return err
	}
	if err := checkTarget(dir); err != nil {
		return err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	files := []struct {
		name string
		data []byte
	}{{PolicyFile, b.Policy}, {ADMFile, b.ADM}, {ManifestFile, mj}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if err := writeSynced(filepath.Join(tmp, f.name), f.data); err != nil {
			return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
	}
	// os.Rename refuses to replace a directory, even an empty one:
	// remove the empty target first (os.Remove fails if it filled up).
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("policies: writing bundle %s: replacing the empty directory: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("policies: writing bundle %s: moving it into place: %w", dir, err)
	}
	done = true
	if err := syncDir(parent); err != nil {
		return fmt.Errorf("policies: bundle %s written but its directory entry is not synced: %w", dir, err)
	}
	return nil
}

// Complete fills b's derived manifest fields (format, checksums and, where
// zero, the dims, m and the ADM normaliser, from the models' metadata) and
// checks the result against the models, as WriteBundle does; a completed
// bundle can be opened in memory with OpenBundle.
func (b *Bundle) Complete() error {
	m, err := completeManifest(*b)
	if err != nil {
		return err
	}
	b.Manifest = *m
	return nil
}

// completeManifest fills the derived manifest fields and checks the result
// against the models.
func completeManifest(b Bundle) (*Manifest, error) {
	m := b.Manifest
	m.Format = FormatVersion
	m.Normalizers = maps.Clone(m.Normalizers)
	pi, err := Inspect(b.Policy)
	if err != nil {
		return nil, fmt.Errorf("policies: %s: %w", PolicyFile, err)
	}
	if m.ObsDim == 0 {
		m.ObsDim, _ = infer.MetaInt(pi.Metadata, schema.MetaObsDim)
	}
	if m.ActDim == 0 {
		m.ActDim, _ = infer.MetaInt(pi.Metadata, schema.MetaActDim)
	}
	m.Files = map[string]FileSum{PolicyFile: sum(b.Policy)}
	var ai *ModelInfo
	if b.ADM != nil {
		if ai, err = Inspect(b.ADM); err != nil {
			return nil, fmt.Errorf("policies: %s: %w", ADMFile, err)
		}
		if m.M == 0 {
			m.M, _ = infer.MetaInt(ai.Metadata, schema.MetaM)
		}
		if _, ok := m.Normalizers["adm"]; !ok {
			mean, err1 := metaFloats(ai.Metadata, schema.MetaNormMean)
			std, err2 := metaFloats(ai.Metadata, schema.MetaNormStd)
			if err1 == nil && err2 == nil && len(mean) > 0 {
				if m.Normalizers == nil {
					m.Normalizers = map[string]Normalizer{}
				}
				m.Normalizers["adm"] = Normalizer{Mean: mean, Std: std}
			}
		}
		m.Files[ADMFile] = sum(b.ADM)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := checkModels(&m, pi, ai); err != nil {
		return nil, err
	}
	return &m, nil
}

func checkTarget(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("policies: writing bundle %s: it exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("policies: writing bundle %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("policies: writing bundle %s: the directory exists and is not empty (remove it or choose another path)", dir)
	}
	return nil
}

func sum(b []byte) FileSum {
	h := sha256.Sum256(b)
	return FileSum{SHA256: hex.EncodeToString(h[:]), Bytes: int64(len(b))}
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadBundle reads the bundle in dir (or the directory of a manifest.json
// path), verifies every file's size and sha256 against the manifest and
// checks the manifest against the models' metadata.
func ReadBundle(path string) (*Bundle, error) {
	dir := path
	if filepath.Base(path) == ManifestFile {
		dir = filepath.Dir(path)
	}
	mj, err := regfile.Read(filepath.Join(dir, ManifestFile), maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("policies: bundle %s: %w", dir, err)
	}
	m, err := UnmarshalManifest(mj)
	if err != nil {
		return nil, fmt.Errorf("policies: bundle %s: %w", dir, err)
	}
	b := &Bundle{Manifest: *m, digest: sum(mj).SHA256}
	for _, name := range []string{PolicyFile, ADMFile} {
		want, listed := m.Files[name]
		p := filepath.Join(dir, name)
		if !listed {
			if _, err := os.Stat(p); err == nil {
				return nil, fmt.Errorf("policies: bundle %s: %s is present but the manifest does not list it", dir, name)
			}
			continue
		}
		data, err := regfile.Read(p, maxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("policies: bundle %s: %w", dir, err)
		}
		if got := sum(data); got != want {
			return nil, fmt.Errorf("policies: bundle %s: %s does not match the manifest (file: %d bytes, sha256 %s; manifest: %d bytes, sha256 %s): it was modified or corrupted",
				dir, name, got.Bytes, got.SHA256, want.Bytes, want.SHA256)
		}
		if name == PolicyFile {
			b.Policy = data
		} else {
			b.ADM = data
		}
	}
	pi, err := Inspect(b.Policy)
	if err != nil {
		return nil, fmt.Errorf("policies: bundle %s: %s: %w", dir, PolicyFile, err)
	}
	var ai *ModelInfo
	if b.ADM != nil {
		if ai, err = Inspect(b.ADM); err != nil {
			return nil, fmt.Errorf("policies: bundle %s: %s: %w", dir, ADMFile, err)
		}
	}
	if err := checkModels(m, pi, ai); err != nil {
		return nil, fmt.Errorf("policies: bundle %s: %w", dir, err)
	}
	return b, nil
}
