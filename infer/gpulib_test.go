package infer

import (
	"os"
	"regexp"
	"testing"
)

// TestGPULibrariesMatchSetupScript: the names and checksums doctor checks
// are the ones scripts/setup_gpu.sh verifies and installs.
func TestGPULibrariesMatchSetupScript(t *testing.T) {
	src, err := os.ReadFile("../scripts/setup_gpu.sh")
	if err != nil {
		t.Fatal(err)
	}
	// "name|package|path in archive|sha256" entries of the LIBS array.
	re := regexp.MustCompile(`"([^"|]+)\|[^"|]+\|[^"|]+\|([0-9a-f]{64})"`)
	script := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		script[m[1]] = m[2]
	}
	if len(script) != len(GPULibraries) {
		t.Fatalf("script lists %d libraries %v, Go %d", len(script), script, len(GPULibraries))
	}
	for _, l := range GPULibraries {
		if script[l.Name] != l.SHA256 {
			t.Errorf("%s: script sha256 %q, Go %q", l.Name, script[l.Name], l.SHA256)
		}
	}
	if !regexp.MustCompile(`GPU_ORT_VERSION=` + regexp.QuoteMeta(GPUORTVersion) + `\n`).Match(src) {
		t.Errorf("script's GPU_ORT_VERSION is not %s", GPUORTVersion)
	}
}
