package kernels

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPTXMatchesSources fails when a kernel source changed after kernels.ptx
// was made: run `make ptx` (device/kernels/gen.sh) where nvcc exists and
// commit the new PTX.
func TestPTXMatchesSources(t *testing.T) {
	got, want := PTXHash(), SourceHash()
	if got != want {
		t.Fatalf("kernels.ptx was made from sources with sha256 %q; the sources now hash to %q: run `make ptx` and commit kernels.ptx", got, want)
	}
}

// TestPTXEntries checks that the PTX defines every kernel source's entry
// point by name (extern "C", so no mangling).
func TestPTXEntries(t *testing.T) {
	for _, name := range []string{"fill", "scale", "axpy", "polyak", "gather_rows", "bias_add", "bias_relu",
		"relu_grad", "col_sum", "mse_grad", "sq_err", "adam", "adm_gru_fwd", "adm_gru_bwd", "adm_swish_res", "adm_center",
		"adm_norm", "adm_norm_terms", "adm_res_grad", "adm_head", "adm_loss", "dropout_mask", "ens_swish_grad", "ens_swish",
		"ens_bias_add", "ens_head", "ens_loss", "roll_gru0", "roll_gru", "roll_plan_in",
		"roll_drop_base", "roll_resblock", "roll_finish", "roll_gather_cols",
		"roll_push", "roll_act", "roll_done"} {
		if !strings.Contains(PTX, ".entry "+name+"(") {
			t.Errorf("kernels.ptx has no entry %s", name)
		}
	}
}

// TestHashMatchesGenerator checks that gen.sh's shell hash equals
// SourceHash, so the check above compares like with like.
func TestHashMatchesGenerator(t *testing.T) {
	script := `for f in $(LC_ALL=C ls *.cu kernel.h | LC_ALL=C sort); do printf '%s\n%d\n' "$f" "$(stat -c %s "$f")"; cat "$f"; done | sha256sum | cut -d' ' -f1`
	if b, err := os.ReadFile("gen.sh"); err != nil || !strings.Contains(string(b), "printf '%s\\n%d\\n' \"$f\" \"$(stat -c %s \"$f\")\"") {
		t.Fatalf("gen.sh no longer hashes as this test does (%v)", err)
	}
	out, err := exec.Command("bash", "-c", script).Output()
	if err != nil {
		t.Skipf("bash/sha256sum: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != SourceHash() {
		t.Fatalf("shell hash %s, SourceHash %s", got, SourceHash())
	}
}

// TestPTXRegenerates rebuilds the PTX where the nvcc that made the
// committed one exists and compares them byte for byte.
func TestPTXRegenerates(t *testing.T) {
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		t.Skip("no nvcc: only the sources' hash is checked")
	}
	ver, err := exec.Command(nvcc, "--version").Output()
	if err != nil {
		t.Skipf("nvcc --version: %v", err)
	}
	lines := strings.SplitN(PTX, "\n", 3)
	if len(lines) < 2 {
		t.Fatal("kernels.ptx has no header")
	}
	// "// nvcc 11.8 V11.8.89 -ptx ...": another nvcc writes other PTX.
	f := strings.Fields(lines[1])
	if len(f) < 4 || !strings.Contains(string(ver), f[3]) {
		t.Skipf("kernels.ptx was made by %q, this nvcc differs", lines[1])
	}
	out := t.TempDir() + "/kernels.ptx"
	if b, err := exec.Command("bash", "gen.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != PTX {
		t.Fatal("kernels.ptx differs from what gen.sh makes now: run `make ptx` and commit kernels.ptx")
	}
}
