package infer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	ort "github.com/yalue/onnxruntime_go"
)

// Options configure an ONNX Runtime session.
type Options struct {
	// Provider is "cpu" (default) or "cuda". CUDA needs a binary built with
	// the admpo_cuda tag, ONNX Runtime's CUDA provider library (`make
	// setup-gpu`, CUDAProviderPath; the ONNX Runtime core of the same
	// release through ADMPO_ORT_LIB), a GPU and the CUDA libraries on the
	// loader's path; see CUDAOptions for the provider's options.
	Provider string
	// Threads is the intra-op thread count; 0 lets ONNX Runtime decide,
	// except in the ADM-Roll engines, whose sessions then run one thread
	// each and which parallelise over sub-batches instead (Workers).
	Threads int
	// Workers (ADM-Roll engines only) is how many sub-batches of a roll-out
	// step run through ONNX Runtime at once, each call on its own thread
	// with Threads intra-op threads. 0 means 4 with CUDA (calls overlap on
	// the GPU), one per CPU (GOMAXPROCS) when Threads is 0 on the CPU, else 1.
	Workers int
	// BatchRows (ADM-Roll engines only) caps the rows of one ONNX Runtime
	// call; 0 means 1024 on the CPU (cache-sized) and no cap with CUDA.
	// Rows are independent, so it changes results by float rounding at most.
	BatchRows int
	// Spin lets ONNX Runtime's idle intra-op threads busy-wait for the next
	// operator (its own default). admpo turns spinning off unless asked:
	// on a shared machine, and beside the roll-out engines' workers, the
	// spinning threads burn CPU that the real work needs (with it on, the
	// policy's idle threads cost an ADMPO-ON roll-out ~20% of its
	// transitions per CPU-second).
	Spin bool
	// Binding (incremental ADM-Roll engine only) keeps the engine's GRU
	// hidden states in ONNX Runtime buffers between the steps of a
	// roll-out (I/O binding; device memory with CUDA) instead of copying
	// them to and from Go memory every step: BindingOn, BindingOff, or
	// BindingAuto ("" too), which binds on the CUDA provider only (on the
	// CPU the copies cost little and the unbound path is as fast).
	Binding string
	// Profile, when set, turns on ONNX Runtime's profiling in every
	// session opened with these options: each session writes a JSON trace
	// (Chrome trace format: every node's run, its operator and provider,
	// each Run's total) when it closes, to a file named Profile, "-", the
	// session's number in this process, and ONNX Runtime's date and time
	// suffix. With the CUDA provider a node's time is its host side (the
	// kernel launches and any wait), not the GPU's.
	Profile string
}

// profiled numbers the sessions opened with Options.Profile, so that two
// sessions opened within one second (ONNX Runtime's file names carry the
// time to the second) write to different files.
var profiled atomic.Int64

// writableDir checks that dir is a directory where a file can be created.
func writableDir(dir string) error {
	f, err := os.CreateTemp(dir, ".admpo-profile-check-*")
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Session is one loaded ONNX model with named inputs and outputs.
type Session struct {
	s       *ort.DynamicAdvancedSession
	inputs  []string
	outputs []string
	meta    map[string]string
}

// Open loads an ONNX model from memory. It checks that the model has the
// named inputs and outputs and fails with a clear error for bytes that are
// not a model ONNX Runtime can load.
func Open(model []byte, inputs, outputs []string, opts Options) (*Session, error) {
	return open(model, inputs, outputs, opts, opts.Threads)
}

// openEngine opens an ADM-Roll engine's session with engineThreads
// intra-op threads. The inputs named in optional join the session's inputs
// (after inputs, in order) when the model has them.
func openEngine(model []byte, inputs, outputs []string, opts Options, optional ...string) (*Session, error) {
	return open(model, inputs, outputs, opts, engineThreads(opts), optional...)
}

func open(model []byte, inputs, outputs []string, opts Options, threads int, optional ...string) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if len(model) == 0 {
		return nil, errors.New("infer: empty ONNX model")
	}
	ins, outs, err := ort.GetInputOutputInfoWithONNXData(model)
	if err != nil {
		return nil, fmt.Errorf("infer: not a loadable ONNX model (%d bytes): %w", len(model), err)
	}
	if err := hasNames("input", ins, inputs); err != nil {
		return nil, err
	}
	for _, o := range optional {
		if hasNames("input", ins, []string{o}) == nil {
			inputs = append(inputs[:len(inputs):len(inputs)], o)
		}
	}
	if err := hasNames("output", outs, outputs); err != nil {
		return nil, err
	}
	meta, err := readMetadata(model)
	if err != nil {
		return nil, err
	}
	if err := cudaRunsGraph(opts, model); err != nil {
		return nil, err
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("infer: session options: %w", err)
	}
	defer so.Destroy()
	if opts.Profile != "" {
		// ONNX Runtime says nothing when it cannot write the trace.
		if err := writableDir(filepath.Dir(opts.Profile)); err != nil {
			return nil, fmt.Errorf("infer: profiling to %s: %w", opts.Profile, err)
		}
		if err := so.EnableProfiling(fmt.Sprintf("%s-%d", opts.Profile, profiled.Add(1))); err != nil {
			return nil, fmt.Errorf("infer: profiling to %s: %w", opts.Profile, err)
		}
	}
	if !opts.Spin {
		if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, fmt.Errorf("infer: session options: %w", err)
		}
	}
	if threads > 0 {
		if err := so.SetIntraOpNumThreads(threads); err != nil {
			return nil, fmt.Errorf("infer: threads: %w", err)
		}
		if err := so.SetInterOpNumThreads(1); err != nil {
			return nil, fmt.Errorf("infer: threads: %w", err)
		}
	}
	if err := CheckProvider(opts.Provider); err != nil {
		return nil, err
	}
	if opts.CUDA() {
		if err := appendCUDA(so); err != nil {
			return nil, err
		}
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, inputs, outputs, so)
	if err != nil {
		return nil, fmt.Errorf("infer: creating session: %w", err)
	}
	return &Session{s: s, inputs: inputs, outputs: outputs, meta: meta}, nil
}

func hasNames(kind string, info []ort.InputOutputInfo, want []string) error {
	have := map[string]bool{}
	var names []string
	for _, i := range info {
		have[i.Name] = true
		names = append(names, i.Name)
	}
	for _, w := range want {
		if !have[w] {
			return fmt.Errorf("infer: model has no %s %q (it has %s)", kind, w, strings.Join(names, ", "))
		}
	}
	return nil
}

func readMetadata(model []byte) (map[string]string, error) {
	md, err := ort.GetModelMetadataWithONNXData(model)
	if err != nil {
		return nil, fmt.Errorf("infer: reading model metadata: %w", err)
	}
	defer md.Destroy()
	keys, err := md.GetCustomMetadataMapKeys()
	if err != nil {
		return nil, fmt.Errorf("infer: reading model metadata: %w", err)
	}
	meta := make(map[string]string, len(keys))
	for _, k := range keys {
		v, _, err := md.LookupCustomMetadataMap(k)
		if err != nil {
			return nil, fmt.Errorf("infer: metadata %q: %w", k, err)
		}
		meta[k] = v
	}
	return meta, nil
}

// Metadata returns the model's metadata_props.
func (s *Session) Metadata() map[string]string { return s.meta }

// runHook, set by tests only (CaptureRuns), sees the input names and
// values of every Run before it runs.
var runHook func(names []string, inputs []ort.Value)

// Run evaluates the model; inputs and outputs follow the order given to Open.
func (s *Session) Run(inputs, outputs []ort.Value) error {
	if runHook != nil {
		runHook(s.inputs, inputs)
	}
	if err := s.s.Run(inputs, outputs); err != nil {
		return fmt.Errorf("infer: run: %w", err)
	}
	return nil
}

// Close frees the session.
func (s *Session) Close() {
	if s != nil && s.s != nil {
		s.s.Destroy()
		s.s = nil
	}
}

// tensors is a set of preallocated float32/int32 tensors reused across runs
// of one batch size.
type tensors struct {
	vals []ort.Value
}

func (t *tensors) destroy() {
	for _, v := range t.vals {
		if v != nil {
			v.Destroy()
		}
	}
	t.vals = nil
}

// CheckProvider returns an error unless p names a provider Options takes:
// "cpu" (or empty) or "cuda", in any case. Whether CUDA is usable is only
// known when a session opens.
func CheckProvider(p string) error {
	switch strings.ToLower(p) {
	case "", "cpu", "cuda":
		return nil
	}
	return fmt.Errorf("infer: unknown provider %q (cpu or cuda)", p)
}

// CUDA reports whether the options ask for the CUDA provider (Provider
// "cuda", any case).
func (o Options) CUDA() bool { return strings.EqualFold(o.Provider, "cuda") }
