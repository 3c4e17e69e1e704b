package infer_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand"
	"os"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/onnx"
)

// rollHashes are TestRolloutHashes' digests, recorded on the refactor
// machine (docs/results/refactor: an Intel Xeon, ONNX Runtime's CPU
// provider) before internal/rollout took infer's shared types.
var rollHashes = map[string]string{
	"direct/plain":                      "855b50fa34006733030ce4a7ca8bebe456e462459c036913abfaa606a9ad2768",
	"direct/penalty":                    "ca522afecc0d9a0ba83e471a8cd563f26d4317b08faf2132fbedf85b5d9419d4",
	"direct/deterministic":              "47f7f56714f27d3b34df6228df071b507029b76baa9b4e4d947ed6dffbc6e917",
	"incremental/plain":                 "855b50fa34006733030ce4a7ca8bebe456e462459c036913abfaa606a9ad2768",
	"incremental/penalty":               "ca522afecc0d9a0ba83e471a8cd563f26d4317b08faf2132fbedf85b5d9419d4",
	"incremental/deterministic":         "47f7f56714f27d3b34df6228df071b507029b76baa9b4e4d947ed6dffbc6e917",
	"direct-dropout/plain":              "aa77f97c907a4041d50a50a10c39a8210764ca61bcf6a6cd09a266afc2aba05a",
	"direct-dropout/penalty":            "08ec9a1f7f650c2bf1913f26704949d65e0a6b4d83a912fe225104d3651d1111",
	"direct-dropout/deterministic":      "d2ef263058fe534b20ae42d7efe9617a7f9a84971ae1dbaccd53c1b46506ceaf",
	"incremental-dropout/plain":         "aa77f97c907a4041d50a50a10c39a8210764ca61bcf6a6cd09a266afc2aba05a",
	"incremental-dropout/penalty":       "08ec9a1f7f650c2bf1913f26704949d65e0a6b4d83a912fe225104d3651d1111",
	"incremental-dropout/deterministic": "d2ef263058fe534b20ae42d7efe9617a7f9a84971ae1dbaccd53c1b46506ceaf",
	"ensemble/plain":                    "8516eb73744f773d851047e7619100864047cea01c28fce3586799ab88f38988",
	"ensemble/penalty":                  "45ca9f675f127bff05331d9b775ef474605900d3bc14a7bfb396056e049cdc93",
	"ensemble/deterministic":            "d7c8c7abcfafc86e2df1b3acb266f2494d28b2d48d9f44eba476c09530846b29",
}

// hashTransitions is a SHA-256 over every field of tr, bit for bit: N, then
// each slice's length and its values (floats as their IEEE bits, little
// endian; Done as 0/1 bytes).
func hashTransitions(tr *infer.Transitions) string {
	h := sha256.New()
	word := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	floats := func(s []float32) {
		word(uint64(len(s)))
		b := make([]byte, 0, 4*len(s))
		for _, v := range s {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		h.Write(b)
	}
	ints := func(s []int32) {
		word(uint64(len(s)))
		b := make([]byte, 0, 4*len(s))
		for _, v := range s {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		h.Write(b)
	}
	word(uint64(tr.N))
	floats(tr.Obs)
	floats(tr.Act)
	floats(tr.Rew)
	floats(tr.NextObs)
	word(uint64(len(tr.Done)))
	for _, d := range tr.Done {
		if d {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	floats(tr.Uncertainty)
	ints(tr.Step)
	ints(tr.Back)
	floats(tr.MeanNextObs)
	return hex.EncodeToString(h.Sum(nil))
}

// TestRolloutHashes rolls out one seeded batch per engine (ADMDirect and
// ADMIncremental with and without MC dropout, the ensemble) under three
// settings (plain with a Done function; U^ADM penalty, chunks and
// WantMean; a deterministic policy with a penalty) and hashes every output
// bit for bit, so that a refactor of the roll-out's code shows it changed
// nothing. ONNX Runtime's results depend on the CPU's kernels, so the
// digests are compared only with ADMPO_ROLL_HASHES=check, on the machine
// type they were recorded on; otherwise the test logs them.
func TestRolloutHashes(t *testing.T) {
	const n, m = 40, 3
	f := newADMFixture(t, 71, smallADMConfig(m), onnx.ADMUnrolled)
	dd, di := dropEngines(t, f, onnx.ADMUnrolled, testDropout, testOpts)
	ens := newEnsFixture(t)
	admStart := testfix.RandStart(rand.New(rand.NewSource(5)), n, m, f.obsDim, f.actDim, func(i int) int { return 1 + i%m })
	ensStart := testfix.RandStart(rand.New(rand.NewSource(6)), n, 1, 5, 2, func(int) int { return 1 })
	engines := []struct {
		name  string
		r     infer.Roller
		p     *infer.Policy
		start *infer.Start
	}{
		{"direct", f.direct, f.pol, admStart},
		{"incremental", f.inc, f.pol, admStart},
		{"direct-dropout", dd, f.pol, admStart},
		{"incremental-dropout", di, f.pol, admStart},
		{"ensemble", ens.eng, ens.pol, ensStart},
	}
	cfgs := []struct {
		name string
		cfg  infer.RollConfig
	}{
		{"plain", infer.RollConfig{Horizon: 5, Done: doneOutside(1.5)}},
		{"penalty", infer.RollConfig{Horizon: 5, Penalty: 1, ChunkRows: 16, WantMean: true, Done: doneOutside(1.5)}},
		{"deterministic", infer.RollConfig{Horizon: 4, Penalty: 0.5, DeterministicPolicy: true}},
	}
	check := os.Getenv("ADMPO_ROLL_HASHES") == "check"
	for _, e := range engines {
		for _, c := range cfgs {
			name := e.name + "/" + c.name
			got := hashTransitions(rollSeeded(t, e.r, e.p, e.start, c.cfg, 17))
			if !check {
				t.Logf("%q: %q,", name, got)
				continue
			}
			if want, ok := rollHashes[name]; !ok || got != want {
				t.Errorf("%s: roll-out hash %s, recorded %s", name, got, want)
			}
		}
	}
}
