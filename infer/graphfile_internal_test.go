package infer

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/admpo/admpo/internal/npz"
	"github.com/admpo/admpo/internal/protofield"
)

// TestCUDAGraphFile runs one ONNX file on the CPU and on a test provider
// (CUDA by default) with inputs from an .npz file and compares every output
// (float: |test-cpu| <= 1e-4·max(1, |cpu|); integers and bools: equal;
// shapes: equal). It fails on any difference and prints one line per output
// ("GRAPHFILE output ...", with the largest error) and a last line
// "GRAPHFILE RESULT match|mismatch"; a failure before the comparison prints
// "GRAPHFILE ERROR <stage>: ..." (stages read, inputs, ref-session and
// ref-run for the CPU reference, <provider>-session, <provider>-run). scripts/gpu_bisect.sh drives it, one
// process per graph. Active with ADMPO_GPU_TEST=1 and ADMPO_GPU_GRAPH=<.onnx>:
//
//	ADMPO_GPU_GRAPH_INPUTS   the inputs (.npz, one array per graph input by
//	                         name; default: the graph's path with .npz)
//	ADMPO_GPU_GRAPH_PROVIDER cuda (default; an admpo_cuda build), cpu (a
//	                         second CPU session: checks the runner without a
//	                         GPU) or none (the CPU only, for _DUMP)
//	ADMPO_GPU_GRAPH_OPTS     the test session's options, comma-separated:
//	                         opt=0|1|2|99 (graph optimisation: off, basic,
//	                         extended, all), mempattern=0|1, arena=0|1,
//	                         nofallback (session.disable_cpu_ep_fallback=1:
//	                         session creation fails unless every node can
//	                         run on the provider), verbose (ONNX Runtime's
//	                         verbose log: node placements), any other k=v a
//	                         session config entry
//	ADMPO_GPU_GRAPH_ALLOC    go (default: outputs preallocated in Go memory
//	                         with the CPU's shapes, as the engines do; empty
//	                         ones are left to ONNX Runtime) or ort
//	ADMPO_GPU_GRAPH_DUMP     write the CPU outputs to this .npz
//	ADMPO_GPU_GRAPH_SIMULATE_CRASH    op types (comma-separated): when the
//	                         graph has one, the process kills itself with
//	                         SIGSEGV before the test run (a stand-in crash)
//	ADMPO_GPU_GRAPH_SIMULATE_MISMATCH op types: when the graph has one, the
//	                         test side's first float output is off by 1
//
// The CUDA provider's options come from ADMPO_CUDA_EP_OPTIONS as in every
// "cuda" session. Unlike Open, it runs any graph (no cudaRunsGraph refusal).
func TestCUDAGraphFile(t *testing.T) {
	path := os.Getenv("ADMPO_GPU_GRAPH")
	if os.Getenv("ADMPO_GPU_TEST") != "1" || path == "" {
		t.Skip("set ADMPO_GPU_TEST=1 and ADMPO_GPU_GRAPH=<model.onnx> (see the doc comment)")
	}
	fail := func(stage string, err error) {
		t.Helper()
		fmt.Printf("GRAPHFILE ERROR %s: %v\n", stage, err)
		t.Fatalf("%s: %v", stage, err)
	}
	if err := Init(); err != nil {
		fail("init", err)
	}
	model, err := os.ReadFile(path)
	if err != nil {
		fail("read", err)
	}
	inPath := os.Getenv("ADMPO_GPU_GRAPH_INPUTS")
	if inPath == "" {
		inPath = strings.TrimSuffix(path, ".onnx") + ".npz"
	}
	arrays, err := npz.Read(inPath)
	if err != nil {
		fail("inputs", err)
	}
	ins, outs, err := ort.GetInputOutputInfoWithONNXData(model)
	if err != nil {
		fail("read", fmt.Errorf("%s is not a loadable ONNX model: %w", path, err))
	}
	inNames, outNames := ioNames(ins), ioNames(outs)
	var inputs []ort.Value
	defer func() { destroyValues(inputs) }()
	for _, name := range inNames {
		i := slices.IndexFunc(arrays, func(a npz.Array) bool { return a.Name == name })
		if i < 0 {
			fail("inputs", fmt.Errorf("%s has no array %q (graph inputs: %s)", inPath, name, strings.Join(inNames, ", ")))
		}
		v, err := valueOf(arrays[i])
		if err != nil {
			fail("inputs", fmt.Errorf("%q: %w", name, err))
		}
		inputs = append(inputs, v)
		fmt.Printf("GRAPHFILE input %s %s%v\n", name, dtypeName(arrays[i].Data), arrays[i].Shape)
	}
	ops, err := opTypes(model)
	if err != nil {
		fail("read", err)
	}
	fmt.Printf("GRAPHFILE graph %s: %d nodes, %d inputs, %d outputs\n", path, len(ops), len(inNames), len(outNames))

	cpu, err := graphSession(model, inNames, outNames, "cpu", "")
	if err != nil {
		fail("ref-session", err)
	}
	defer cpu.Destroy()
	want := make([]ort.Value, len(outNames))
	defer destroyValues(want)
	if err := cpu.Run(inputs, want); err != nil {
		fail("ref-run", err)
	}
	if p := os.Getenv("ADMPO_GPU_GRAPH_DUMP"); p != "" {
		if err := dumpValues(p, outNames, want); err != nil {
			fail("dump", err)
		}
		fmt.Printf("GRAPHFILE dump %s\n", p)
	}
	prov := os.Getenv("ADMPO_GPU_GRAPH_PROVIDER")
	if prov == "" {
		prov = "cuda"
	}
	if prov == "none" {
		fmt.Println("GRAPHFILE RESULT cpu-only")
		return
	}
	opts := os.Getenv("ADMPO_GPU_GRAPH_OPTS")
	test, err := graphSession(model, inNames, outNames, prov, opts)
	if err != nil {
		fail(prov+"-session", err)
	}
	defer test.Destroy()
	got := make([]ort.Value, len(outNames))
	defer destroyValues(got)
	if os.Getenv("ADMPO_GPU_GRAPH_ALLOC") != "ort" {
		for i, w := range want {
			if w.GetShape().FlattenedSize() == 0 {
				continue // an empty output, which the engines never bind: ONNX Runtime allocates it
			}
			if got[i], err = emptyLike(w); err != nil {
				fail("outputs", fmt.Errorf("%q: %w", outNames[i], err))
			}
		}
	}
	fmt.Printf("GRAPHFILE running on %s (options %q)\n", prov, opts)
	if op := hasOp(ops, os.Getenv("ADMPO_GPU_GRAPH_SIMULATE_CRASH")); op != "" {
		fmt.Printf("GRAPHFILE simulated crash: the graph has a %s node\n", op)
		_ = syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		time.Sleep(time.Minute) // the signal ends the process
	}
	if err := test.Run(inputs, got); err != nil {
		fail(prov+"-run", err)
	}
	if op := hasOp(ops, os.Getenv("ADMPO_GPU_GRAPH_SIMULATE_MISMATCH")); op != "" {
		fmt.Printf("GRAPHFILE simulated mismatch: the graph has a %s node\n", op)
		for _, v := range got {
			if f, ok := v.(*ort.Tensor[float32]); ok && len(f.GetData()) > 0 {
				f.GetData()[0]++
				break
			}
		}
	}
	bad := 0
	for i, name := range outNames {
		line, ok := compareValues(got[i], want[i], gpuTolGraph)
		if !ok {
			bad++
		}
		fmt.Printf("GRAPHFILE output %s %s\n", name, line)
	}
	if bad > 0 {
		fmt.Println("GRAPHFILE RESULT mismatch")
		t.Fatalf("%d of %d outputs differ between cpu and %s", bad, len(outNames), prov)
	}
	fmt.Println("GRAPHFILE RESULT match")
}

// gpuTolGraph is TestCUDAGraphFile's tolerance, that of the GPU tests.
const gpuTolGraph = 1e-4

func ioNames(info []ort.InputOutputInfo) []string {
	n := make([]string, len(info))
	for i, x := range info {
		n[i] = x.Name
	}
	return n
}

func destroyValues(vs []ort.Value) {
	for _, v := range vs {
		if v != nil {
			v.Destroy()
		}
	}
}

// graphSession opens model with all its inputs and outputs on provider
// (cpu or cuda) as the roll-out engines open theirs (one intra-op and one
// inter-op thread, no spinning), with the options of ADMPO_GPU_GRAPH_OPTS.
func graphSession(model []byte, ins, outs []string, provider, opts string) (*ort.DynamicAdvancedSession, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	if err := so.SetIntraOpNumThreads(1); err != nil { // as the engines' sessions
		return nil, err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
		return nil, err
	}
	for _, kv := range strings.Split(opts, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		if err := graphOption(so, kv); err != nil {
			return nil, fmt.Errorf("ADMPO_GPU_GRAPH_OPTS %q: %w", kv, err)
		}
	}
	switch provider {
	case "cpu":
	case "cuda":
		if err := appendCUDA(so); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("ADMPO_GPU_GRAPH_PROVIDER=%q: want cuda, cpu or none", provider)
	}
	return ort.NewDynamicAdvancedSessionWithONNXData(model, ins, outs, so)
}

// graphOption applies one ADMPO_GPU_GRAPH_OPTS setting to so.
func graphOption(so *ort.SessionOptions, kv string) error {
	k, v, _ := strings.Cut(kv, "=")
	on := func() (bool, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("want %s=0 or %s=1", k, k)
		}
		return b, nil
	}
	switch k {
	case "opt":
		lv := map[string]ort.GraphOptimizationLevel{"0": ort.GraphOptimizationLevelDisableAll,
			"1": ort.GraphOptimizationLevelEnableBasic, "2": ort.GraphOptimizationLevelEnableExtended,
			"99": ort.GraphOptimizationLevelEnableAll}
		l, ok := lv[v]
		if !ok {
			return fmt.Errorf("want opt=0, 1, 2 or 99")
		}
		return so.SetGraphOptimizationLevel(l)
	case "mempattern":
		b, err := on()
		if err != nil {
			return err
		}
		return so.SetMemPattern(b)
	case "arena":
		b, err := on()
		if err != nil {
			return err
		}
		return so.SetCpuMemArena(b)
	case "nofallback":
		return so.AddSessionConfigEntry("session.disable_cpu_ep_fallback", "1")
	case "verbose":
		return so.SetLogSeverityLevel(ort.LoggingLevelVerbose)
	}
	if v == "" {
		return fmt.Errorf("unknown option (opt=, mempattern=, arena=, nofallback, verbose or a session config key=value)")
	}
	return so.AddSessionConfigEntry(k, v)
}

// valueOf makes a tensor over a's data (no copy).
func valueOf(a npz.Array) (ort.Value, error) {
	if len(a.Shape) == 0 {
		return nil, fmt.Errorf("rank-0 inputs are not supported by onnxruntime_go (make it an initializer)")
	}
	s := ort.NewShape(a.Shape...)
	switch d := a.Data.(type) {
	case []float32:
		return ort.NewTensor(s, d)
	case []float64:
		return ort.NewTensor(s, d)
	case []int32:
		return ort.NewTensor(s, d)
	case []int64:
		return ort.NewTensor(s, d)
	case []bool:
		return ort.NewTensor(s, d)
	}
	return nil, fmt.Errorf("unsupported data %T", a.Data)
}

// emptyLike makes a zeroed tensor of v's type and shape.
func emptyLike(v ort.Value) (ort.Value, error) {
	s := v.GetShape()
	if len(s) == 0 {
		return nil, fmt.Errorf("rank-0 output: use ADMPO_GPU_GRAPH_ALLOC=ort")
	}
	n := max(s.FlattenedSize(), 1)
	switch v.(type) {
	case *ort.Tensor[float32]:
		return ort.NewTensor(s, make([]float32, n))
	case *ort.Tensor[float64]:
		return ort.NewTensor(s, make([]float64, n))
	case *ort.Tensor[int32]:
		return ort.NewTensor(s, make([]int32, n))
	case *ort.Tensor[int64]:
		return ort.NewTensor(s, make([]int64, n))
	case *ort.Tensor[bool]:
		return ort.NewTensor(s, make([]bool, n))
	}
	return nil, fmt.Errorf("unsupported output type %T", v)
}

// arrayOf copies a tensor into an npz array.
func arrayOf(name string, v ort.Value) (npz.Array, error) {
	a := npz.Array{Name: name, Shape: slices.Clone([]int64(v.GetShape()))}
	switch t := v.(type) {
	case *ort.Tensor[float32]:
		a.Data = slices.Clone(t.GetData())
	case *ort.Tensor[float64]:
		a.Data = slices.Clone(t.GetData())
	case *ort.Tensor[int32]:
		a.Data = slices.Clone(t.GetData())
	case *ort.Tensor[int64]:
		a.Data = slices.Clone(t.GetData())
	case *ort.Tensor[bool]:
		a.Data = slices.Clone(t.GetData())
	default:
		return a, fmt.Errorf("%q: unsupported output type %T", name, v)
	}
	return a, nil
}

func dumpValues(path string, names []string, vs []ort.Value) error {
	arrays := make([]npz.Array, len(vs))
	for i, v := range vs {
		a, err := arrayOf(names[i], v)
		if err != nil {
			return err
		}
		arrays[i] = a
	}
	return npz.Write(path, arrays)
}

func dtypeName(data any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", data), "[]")
}

// compareValues describes got against want (shape, largest error, the
// count of values off by more than tol) and reports whether they agree.
func compareValues(got, want ort.Value, tol float64) (string, bool) {
	wa, err := arrayOf("want", want)
	if err != nil {
		return err.Error(), false
	}
	ga, err := arrayOf("got", got)
	if err != nil {
		return err.Error(), false
	}
	head := fmt.Sprintf("%s cpu%v test%v", dtypeName(wa.Data), wa.Shape, ga.Shape)
	if !slices.Equal(wa.Shape, ga.Shape) || dtypeName(wa.Data) != dtypeName(ga.Data) {
		return head + " MISMATCH (shape or type)", false
	}
	var maxErr float64
	bad, first := 0, -1
	note := func(i int, e float64, off bool) {
		maxErr = max(maxErr, e)
		if off {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	switch w := wa.Data.(type) {
	case []float32:
		g := ga.Data.([]float32)
		for i := range w {
			e, off := floatErr(float64(g[i]), float64(w[i]), tol)
			note(i, e, off)
		}
	case []float64:
		g := ga.Data.([]float64)
		for i := range w {
			e, off := floatErr(g[i], w[i], tol)
			note(i, e, off)
		}
	case []int32:
		g := ga.Data.([]int32)
		for i := range w {
			note(i, math.Abs(float64(g[i])-float64(w[i])), g[i] != w[i])
		}
	case []int64:
		g := ga.Data.([]int64)
		for i := range w {
			note(i, math.Abs(float64(g[i])-float64(w[i])), g[i] != w[i])
		}
	case []bool:
		g := ga.Data.([]bool)
		for i := range w {
			e := 0.0
			if g[i] != w[i] {
				e = 1
			}
			note(i, e, e != 0)
		}
	}
	s := fmt.Sprintf("%s maxerr=%.3g bad=%d", head, maxErr, bad)
	if bad > 0 {
		return s + fmt.Sprintf(" (first at flat index %d) MISMATCH", first), false
	}
	return s + " ok", true
}

// floatErr is |got-want| and whether it exceeds tol·max(1, |want|) (NaN
// agrees with NaN only).
func floatErr(got, want, tol float64) (float64, bool) {
	if math.IsNaN(got) || math.IsNaN(want) {
		if math.IsNaN(got) && math.IsNaN(want) {
			return 0, false
		}
		return math.Inf(1), true
	}
	e := math.Abs(got - want)
	if math.IsInf(want, 0) && got == want {
		e = 0
	}
	return e, e > tol*max(1, math.Abs(want))
}

// hasOp returns the first op type of the comma-separated list that occurs
// in ops, or "".
func hasOp(ops []string, list string) string {
	for _, op := range strings.Split(list, ",") {
		if op = strings.TrimSpace(op); op != "" && slices.Contains(ops, op) {
			return op
		}
	}
	return ""
}

// opTypes lists the op type of every node of a serialized ModelProto's main
// graph (field 7; GraphProto node = 1; NodeProto op_type = 4).
func opTypes(model []byte) ([]string, error) {
	graph, err := protofield.Bytes(model, 7)
	if err != nil || len(graph) == 0 {
		return nil, fmt.Errorf("reading the model's graph: %v", err)
	}
	nodes, err := protofield.Bytes(graph[0], 1)
	if err != nil {
		return nil, fmt.Errorf("reading the graph's nodes: %w", err)
	}
	ops := make([]string, 0, len(nodes))
	for _, n := range nodes {
		t, err := protofield.Bytes(n, 4)
		if err != nil || len(t) == 0 {
			return nil, fmt.Errorf("a node without op_type: %v", err)
		}
		ops = append(ops, string(t[0]))
	}
	return ops, nil
}
