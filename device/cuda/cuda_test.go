//go:build admpo_cuda

package cuda

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev/admdevtest"
	"github.com/admpo/admpo/device/cuda/internal/cheap"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/ensdev/ensdevtest"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/device/rolldev/rolldevtest"
	"github.com/admpo/admpo/device/sacdev/sacdevtest"
)

// open returns the first GPU with pedantic cuBLAS, or skips without
// ADMPO_GPU_TEST=1. (Without a GPU the binary does not get here: cu's
// initialisation ends the process first.)
func open(t testing.TB) *Device {
	t.Helper()
	if os.Getenv("ADMPO_GPU_TEST") != "1" {
		t.Skip("set ADMPO_GPU_TEST=1 to run the GPU tests")
	}
	d, err := Open(Config{Pedantic: true})
	if err != nil {
		t.Fatalf("ADMPO_GPU_TEST=1 but no usable GPU: %v", err)
	}
	t.Logf("device: %s", d.Name())
	return d
}

func TestSuite(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.Run(t, d, devicetest.Options{Tol: 1e-4})
}

func TestClose(t *testing.T) { devicetest.TestClose(t, open(t)) }

func TestMLP(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.TestMLP(t, d, 1e-4)
}

// TestTimeMLP prints the milliseconds per MLP train step on the GPU.
func TestTimeMLP(t *testing.T) {
	d := open(t)
	defer d.Close()
	devicetest.TimeMLP(t, d, 2000)
}

func BenchmarkMLPStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	devicetest.BenchMLP(b, d)
}

// TestSAC runs the device's SAC learner beside sac.Agent on the CPU for
// three updates (hopper's sizes): weights within 1e-4 of each tensor's
// largest, losses and α within 1e-4 relatively; at most 0.1% of a tensor's
// weights may be past that, each within two Adam steps per update (see
// sacdevtest.Options.Outliers: near-zero gradients summed in cuBLAS's order).
func TestSAC(t *testing.T) {
	d := open(t)
	defer d.Close()
	sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-4, Outliers: 1e-3})
	// The quick preset's 128x128 (a quick SAC run on cuda evaluated far
	// below the CPU's on 2026-11-28) and sizes that are no multiple of a
	// block, over more updates.
	for _, h := range [][]int{{128, 128}, {100, 36}} {
		sacdevtest.Compare(t, d, sacdevtest.Options{Tol: 1e-4, Outliers: 1e-3, Updates: 10, Hidden: h})
	}
}

// TestTimeSAC prints the milliseconds per full SAC update on the GPU.
func TestTimeSAC(t *testing.T) {
	d := open(t)
	defer d.Close()
	sacdevtest.TimeUpdate(t, d, 2000)
}

// TestSACGraph: the SAC update recorded once as a CUDA graph and replayed
// agrees with the direct updates (sacdevtest.CompareGraph) within 1e-5 of
// each tensor's largest weight (the same kernels and products in the same
// order; cuBLAS may pick another algorithm under capture).
func TestSACGraph(t *testing.T) {
	d := open(t)
	defer d.Close()
	sacdevtest.CompareGraph(t, d, 1e-5)
}

// BenchmarkSACGraphUpdate is BenchmarkSACUpdate with one CUDA graph per
// update.
func BenchmarkSACGraphUpdate(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchGraphUpdate(b, d)
}

func BenchmarkSACUpdate(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchUpdate(b, d)
}

// BenchmarkSACSampleUpdate adds drawing and uploading a batch's indices and
// noise (Learner.Sample from a device replay) to each update.
func BenchmarkSACSampleUpdate(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchSampleUpdate(b, d)
}

// TestLaunchUnderGC launches many kernels while other goroutines keep the
// collector marking (GC percent 1), each launch right after cheap.Poison has
// left freed Go heap addresses in the C heap's chunks of the size a
// launch's argument arrays take: gorgonia.org/cu's own Function.Launch
// stores pointers into such chunks and dies here with "found bad pointer in
// Go heap" (as a hopper ADMPO-ON run did on an H200; launch.go). Each launch
// fills the buffer with its own value; the last one must come back.
func TestLaunchUnderGC(t *testing.T) {
	d := open(t)
	defer d.Close()
	const n, launches = 4096, 50000
	buf, err := d.Alloc(device.Float32, n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	runtime.LockOSThread() // one thread: one malloc cache for Poison and the launch
	defer runtime.UnlockOSThread()
	words := cheap.FreedGoAddresses(64, 256<<10)
	stop := cheap.Churn()
	var last float32
	for i := 0; i < launches; i++ {
		cheap.Poison(3*8, 8, words[i%len(words)]) // fill's 3 parameters, 8 bytes each
		last = float32(i % 977)
		if err := d.Launch("fill", n, buf, last); err != nil {
			stop()
			t.Fatalf("launch %d: %v", i, err)
		}
	}
	stop()
	got := make([]float32, n)
	if err := d.Download(got, buf); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != last {
			t.Fatalf("element %d is %g after the last fill with %g", i, v, last)
		}
	}
}

// TestADM runs the device's ADM train step beside models' training graph on
// the CPU: three steps of a small model, and two at the paper's size (3x200
// GRU, four ResBlocks, m = 5, batch 64), from the same weights, batches and
// dropout masks. Losses and outputs within 1e-4 relatively; weights within
// 1e-4 of each tensor's largest, at most 0.1% of them past that, each
// within two Adam steps per step (near-zero gradients summed in cuBLAS's
// order; see admdevtest.Options.Outliers).
func TestADM(t *testing.T) {
	d := open(t)
	defer d.Close()
	t.Run("small", func(t *testing.T) {
		admdevtest.Compare(t, d, admdevtest.Options{Tol: 1e-4, Outliers: 1e-3})
	})
	t.Run("reference", func(t *testing.T) {
		admdevtest.Compare(t, d, admdevtest.Options{Cfg: admdevtest.Reference, Batch: 64, Steps: 2, Tol: 1e-4, Outliers: 1e-3})
	})
	// The step recorded as a CUDA graph at the second step and replayed.
	t.Run("graph", func(t *testing.T) {
		admdevtest.Compare(t, d, admdevtest.Options{Tol: 1e-4, Outliers: 1e-3, Graph: true, Steps: 4})
	})
}

// TestTimeADM prints the milliseconds per ADM train step on the GPU
// (paper's size, batch 256: issue 32's benchmark), queued directly and as
// one CUDA graph per step.
func TestTimeADM(t *testing.T) {
	d := open(t)
	defer d.Close()
	admdevtest.TimeStep(t, d, 500, false)
	admdevtest.TimeStep(t, d, 500, true)
}

func BenchmarkADMStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	admdevtest.BenchStep(b, d, false)
}

// BenchmarkADMGraphStep is BenchmarkADMStep with one CUDA graph per step.
func BenchmarkADMGraphStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	admdevtest.BenchStep(b, d, true)
}

// TestBC runs the device's BC step beside sac.BC on the CPU (hopper's
// sizes, 256x256, batch 256) for three steps, directly and recorded as a
// CUDA graph: weights and Adam moments within 1e-4 of each tensor's
// largest, at most 0.1% of the weights past that (each within two Adam
// steps per step: near-zero gradients summed in cuBLAS's order), the loss
// within 1e-4 relatively.
func TestBC(t *testing.T) {
	d := open(t)
	defer d.Close()
	for _, graph := range []bool{false, true} {
		sacdevtest.CompareBC(t, d, sacdevtest.BCOptions{Tol: 1e-4, Outliers: 1e-3, Graph: graph})
	}
}

func BenchmarkBCStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	sacdevtest.BenchBCStep(b, d)
}

// TestEnsemble runs the device's ensemble train step beside models'
// ensemble graph on the CPU: one step of seven 4x200 members (batch 64)
// and three of a small ensemble recorded as a CUDA graph, from the same
// weights and batches. NLLs and the loss within 1e-4 relatively; Adam
// moments within 1e-4 of each tensor's largest; weights too but for 0.1%,
// each within two Adam steps per step (ensdevtest.Options.Outliers).
func TestEnsemble(t *testing.T) {
	d := open(t)
	defer d.Close()
	t.Run("mbpo", func(t *testing.T) { ensdevtest.Compare(t, d, ensdevtest.Options{Tol: 1e-4, Outliers: 1e-3}) })
	t.Run("graph", func(t *testing.T) {
		ensdevtest.Compare(t, d, ensdevtest.Options{Hidden: []int{16, 12}, Members: 3, Batch: 10, Steps: 3, Tol: 1e-4,
			Outliers: 1e-3, Graph: true})
	})
}

// BenchmarkEnsembleStep times one train step of all seven members at
// MBPO's size (4x200, batch 256 per member).
func BenchmarkEnsembleStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	ensdevtest.BenchStep(b, d, false)
}

// BenchmarkEnsembleGraphStep is BenchmarkEnsembleStep with one CUDA graph
// per step.
func BenchmarkEnsembleGraphStep(b *testing.B) {
	d := open(b)
	defer d.Close()
	ensdevtest.BenchStep(b, d, true)
}

// BenchmarkRollKernels times the roll-out's GRU and head kernels at 131072
// rows of hidden 200 and reports GB/s (docs/device-rollout-plan.md, S3 and
// S4).
func BenchmarkRollKernels(b *testing.B) {
	d := open(b)
	defer d.Close()
	devicetest.BenchRollKernels(b, d, 131072)
}

// TestRolloutPredict runs rolldev's direct ADM forward on the GPU against
// models' Go forward and the packed ONNX graph on ONNX Runtime's CPU
// provider (a subtest skips where ONNX Runtime is not installed): 300 and
// 151 plans with lengths 1..m shuffled, a small model and hopper's size,
// each without and with MC dropout 0.1 (masks from infer.DropoutKeep),
// within 1e-4 (issue 33's S5a).
func TestRolloutPredict(t *testing.T) {
	d := open(t)
	defer d.Close()
	for _, c := range []struct {
		name string
		o    rolldevtest.Options
	}{
		{"small", rolldevtest.Options{Seed: 1}},
		{"small_dropout", rolldevtest.Options{Dropout: 0.1, Seed: 2}},
		{"hopper", rolldevtest.Options{Cfg: rolldevtest.Hopper, Seed: 3}},
		{"hopper_dropout", rolldevtest.Options{Cfg: rolldevtest.Hopper, Dropout: 0.1, Seed: 4}},
	} {
		t.Run(c.name, func(t *testing.T) { rolldevtest.Compare(t, d, c.o) })
	}
}

// BenchmarkRolloutPredict times rolldev's Direct.Predict (and
// PredictDropout, p 0.1) at 131072 plans of hopper's size (lengths 1..5),
// uploads, the host's sort and the downloads included, and reports plans/s
// (issue 33's S5a). gpu_check.sh runs it apart from the other benchmarks,
// with few iterations.
func BenchmarkRolloutPredict(b *testing.B) {
	d := open(b)
	defer d.Close()
	rolldevtest.Bench(b, d, 131072)
}

// TestRollout runs rolldev's Engine on the GPU, in ModeDirect and in
// ModeIncremental, against the float64 reference roll-out and
// infer.ADMDirect and infer.ADMIncremental on ONNX Runtime's CPU provider
// (subtests skip where ONNX Runtime is not installed), from the same seed
// and ChunkRows: the small ADM, 300 start rows of lengths 1..m in chunks
// of 128, horizon 5, penalty 0 and 1, dropout 0 and 0.1, Done on the host,
// the device and both, the deterministic policy, compaction every step
// and never, within 1e-4 with Done, Step and Back equal (issue 33's S5b
// and S6).
func TestRollout(t *testing.T) {
	d := open(t)
	defer d.Close()
	for _, c := range []struct {
		name string
		o    rolldevtest.RollOptions
	}{
		{"plain", rolldevtest.RollOptions{Seed: 1}},
		{"penalty_dropout", rolldevtest.RollOptions{Penalty: 1, Dropout: 0.1, Seed: 4}},
		{"done_host_always", rolldevtest.RollOptions{Done: rolldevtest.DoneHost, Compaction: rolldev.CompactAlways, Seed: 15}},
		{"done_device_never", rolldevtest.RollOptions{Done: rolldevtest.DoneDevice, Penalty: 1,
			Compaction: rolldev.CompactNever, Seed: 6}},
		{"done_both_always", rolldevtest.RollOptions{Done: rolldevtest.DoneBoth, Dropout: 0.1,
			Compaction: rolldev.CompactAlways, Seed: 7}},
		{"deterministic_mean", rolldevtest.RollOptions{Deterministic: true, WantMean: true,
			Done: rolldevtest.DoneDevice, Seed: 28}},
	} {
		for _, mode := range []rolldev.Mode{rolldev.ModeDirect, rolldev.ModeIncremental} {
			o := c.o
			o.Mode = mode
			t.Run(fmt.Sprintf("%s/%v", c.name, mode), func(t *testing.T) { rolldevtest.CompareRollout(t, d, o) })
		}
	}
}

// BenchmarkRollout times rolldev's Engine.Rollout at hopper's size as
// benchmarks/torch_rollout.py rolls out (full windows, horizon 5, no row
// ends), ADMPO-ON and ADMPO-OFF (U^ADM, penalty 1) in ModeDirect and
// ADMPO-OFF in ModeIncremental ("offinc"), at 10k and 100k start rows in
// chunks of 32768 and 131072, and reports transitions/s (issue 33's S5b
// and S6). gpu_check.sh runs it in its device-rollout step beside
// torch_rollout.py at the same rows and chunks.
func BenchmarkRollout(b *testing.B) {
	d := open(b)
	defer d.Close()
	rolldevtest.BenchRollout(b, d, []int{10000, 100000}, []int{32768, 131072})
}

// BenchmarkRolloutIncremental times ADMPO-OFF in ModeIncremental over 1M
// start rows in chunks of 131072 (gpu_check runs it once: -benchtime 1x).
// The Engine takes about 11.5 GB at hopper's size: the Direct forward for
// 655360 plans (4·2829 B a plan, 7.4 GB) and the cache
// (rolldev.IncrementalBytesPerRow, about 28 KB a row, 3.7 GB). One chunk
// of 1M rows would not fit 32-bit indexing (3H·plans within
// device.MaxLen: at most about 710k rows a chunk).
func BenchmarkRolloutIncremental(b *testing.B) {
	d := open(b)
	defer d.Close()
	rolldevtest.BenchRolloutIncremental(b, d, []int{1000000}, []int{131072})
}
