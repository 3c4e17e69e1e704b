package infer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ORTVersion is the ONNX Runtime release admpo is built and tested against.
const ORTVersion = "1.30.0"

// ortLibName is the file name of the shared library inside the cache directory.
const ortLibName = "libonnxruntime.so.1"

// ErrORTMissing is wrapped by LibraryPath and Init when no ONNX Runtime
// shared library can be found.
var ErrORTMissing = errors.New("ONNX Runtime shared library not found")

// CacheDir is where `make setup` places the ONNX Runtime library:
// $ADMPO_CACHE, else $XDG_CACHE_HOME/admpo, else ~/.cache/admpo.
func CacheDir() string {
	if d := os.Getenv("ADMPO_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "admpo")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "admpo-cache")
	}
	return filepath.Join(home, ".cache", "admpo")
}

// LibraryPath returns the ONNX Runtime library to load: $ADMPO_ORT_LIB when
// set (it must exist), else the copy in CacheDir.
func LibraryPath() (string, error) {
	if p := os.Getenv("ADMPO_ORT_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: ADMPO_ORT_LIB=%s: %v (point it at a libonnxruntime.so, or unset it to use the copy `make setup` installs)", ErrORTMissing, p, err)
		}
		return p, nil
	}
	p := filepath.Join(CacheDir(), "onnxruntime-"+ORTVersion, ortLibName)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w at %s: run `make setup` (or scripts/setup.sh) to fetch ONNX Runtime %s, or set ADMPO_ORT_LIB to a libonnxruntime.so", ErrORTMissing, p, ORTVersion)
	}
	return p, nil
}

var (
	initOnce sync.Once
	initErr  error
)

// Init loads ONNX Runtime once per process. Every call returns the first
// call's result.
func Init() error {
	initOnce.Do(func() {
		p, err := LibraryPath()
		if err != nil {
			initErr = err
			return
		}
		ort.SetSharedLibraryPath(p)
		if err := ort.InitializeEnvironment(); err != nil {
			initErr = fmt.Errorf("infer: loading ONNX Runtime from %s: %w", p, err)
		}
	})
	return initErr
}

// RuntimeVersion is the version string reported by the loaded ONNX Runtime,
// or "" before Init succeeds.
func RuntimeVersion() string {
	if initErr != nil || !ort.IsInitialized() {
		return ""
	}
	return ort.GetVersion()
}
