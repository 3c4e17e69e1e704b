package benchmarks

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// RolloutConfig sizes the roll-out benchmark; DefaultRolloutConfig is the
// issue's setting (hopper dims, the paper's model size).
type RolloutConfig struct {
	ObsDim, ActDim, M      int
	Hidden, Layers, Blocks int
	Rows                   []int
	Horizon                int
	Threads                int // ONNX Runtime intra-op threads per call (0: 1 per call, one worker per CPU)
	Workers                int // concurrent ONNX Runtime calls per engine (0: infer's default)
	BatchRows              int // rows per ONNX Runtime call (0: infer's default, 1024 on the CPU)
	Repeats                int
	Provider               string
	Binding                string  // the incremental engine's infer.Options.Binding (auto, on, off; "": auto)
	Dropout                float64 // MC dropout probability of the ADM graphs (0: none)
	// ChunkRows is how many start rows one roll-out step processes together
	// (infer.RollConfig.ChunkRows; 0: infer's default, 8192 on the CPU and
	// 32768 with CUDA).
	ChunkRows int
	// Engines lists the engines to measure, "direct" and/or "incremental"
	// (nil or empty: both).
	Engines []string
	// Form is the ADM graphs' form: "packed" (default: the direct engine's
	// rows each run their own k steps), "unrolled" (the direct engine's rows
	// run all m steps) or "gru" (one ONNX GRU op per layer in both engines'
	// graphs, each direct row's k its sequence_lens); the incremental
	// engine's step graph is unrolled but with "gru". The GFLOP/s column
	// counts the packed work whatever the form.
	Form string
	// ORTProfile is infer.Options.Profile for the roll-outs' sessions:
	// ONNX Runtime's JSON traces, one per session, named from this prefix
	// (empty: off).
	ORTProfile string
	// Device, when set, runs the device engines Engines names
	// (DeviceEngines) on it; DeviceName is its setting, emu or cuda (the
	// device roller's default chunk rows, dynamics.DevChunkRows). Its
	// caller opens and closes it.
	Device     device.Device
	DeviceName string
}

// DeviceEngines are the device engines Rollout can time beside ONNX
// Runtime's (RolloutConfig.Device): dynamics.DevRoller (rolldev.Engine) in
// its two styles, device-direct (rolldev.ModeDirect, direct's evaluation)
// and device-incremental (rolldev.ModeIncremental, incremental's).
var DeviceEngines = []string{"device-direct", "device-incremental"}

// admForm maps RolloutConfig.Form to the exporter's form.
func admForm(name string) (onnx.ADMForm, error) {
	switch name {
	case "", "packed":
		return onnx.ADMPacked, nil
	case "unrolled":
		return onnx.ADMUnrolled, nil
	case "gru":
		return onnx.ADMGRUOp, nil
	}
	return 0, fmt.Errorf("unknown ADM form %q (packed, unrolled or gru)", name)
}

// Check reports an unknown engine in c.Engines, a device engine without
// c.Device, or an unknown c.Form.
func (c RolloutConfig) Check() error {
	for _, e := range c.Engines {
		switch {
		case e == "direct" || e == "incremental":
		case slices.Contains(DeviceEngines, e):
			if c.Device == nil {
				return fmt.Errorf("engine %s needs a device (--device emu or cuda)", e)
			}
		default:
			return fmt.Errorf("unknown engine %q (direct, incremental, %s)", e, strings.Join(DeviceEngines, ", "))
		}
	}
	_, err := admForm(c.Form)
	return err
}

// deviceRoller returns the device engine named engine on c.Device for adm
// (MC dropout c.Dropout) and actor.
func (c RolloutConfig) deviceRoller(engine string, adm *models.ADM, actor *models.Actor) (*dynamics.DevRoller, error) {
	if !slices.Contains(DeviceEngines, engine) {
		return nil, fmt.Errorf("benchmarks: no device engine %q", engine)
	}
	mode, err := dynamics.DevMode(strings.TrimPrefix(engine, "device-")) // the style of the engine's ONNX Runtime twin
	if err != nil {
		return nil, err
	}
	r, err := dynamics.NewDevRoller(c.Device, c.DeviceName, adm)
	if err != nil {
		return nil, err
	}
	r.Mode = mode
	if err := r.SetADM(adm, c.Dropout); err != nil {
		return nil, err
	}
	if err := r.SetActor(actor); err != nil {
		return nil, err
	}
	chunk := c.ChunkRows // the engine for the largest chunk, allocated before the timed roll-outs
	if chunk <= 0 {
		chunk = dynamics.DevChunkRows[strings.ToLower(c.DeviceName)]
	}
	if len(c.Rows) > 0 {
		if err := r.Reserve(min(chunk, slices.Max(c.Rows))); err != nil {
			return nil, errors.Join(err, r.Free())
		}
	}
	return r, nil
}

// wants reports whether engine is among c.Engines (all when empty).
func (c RolloutConfig) wants(engine string) bool {
	return len(c.Engines) == 0 || slices.Contains(c.Engines, engine)
}

// DefaultRolloutConfig: obs 11, act 3, m 5, 3x200 GRU, 4 ResBlocks, 256x256
// actor, batches of 10k and 50k start rows, H = 5.
func DefaultRolloutConfig() RolloutConfig {
	return RolloutConfig{ObsDim: 11, ActDim: 3, M: 5, Hidden: 200, Layers: 3, Blocks: 4,
		Rows: []int{10000, 50000}, Horizon: 5, Repeats: 2}
}

// flops counts the multiply-adds (x2) of the matrix products each engine
// executes, the work the GFLOP/s column is based on: a GRU step from a
// non-zero state, a first step (zero state: no recurrent products), the
// head and the actor.
type flops struct{ actor, gruStep, gruFirst, head float64 }

func countFlops(c RolloutConfig) flops {
	h := float64(c.Hidden)
	in := float64(c.ObsDim + c.ActDim)
	gru := 2 * 3 * h * (in + h) // layer 0
	first := 2 * 3 * h * in
	for l := 1; l < c.Layers; l++ {
		gru += 2 * 3 * h * (h + h)
		first += 2 * 3 * h * h
	}
	head := float64(c.Blocks)*2*h*h + 2*h*2*float64(c.ObsDim+1)
	actor := 2 * (float64(c.ObsDim)*256 + 256*256 + 256*2*float64(c.ActDim))
	return flops{actor: actor, gruStep: gru, gruFirst: first, head: head}
}

// perTransition is the executed work of one transition for an engine, with
// full start windows (so k is uniform in 1..m) and horizon H.
func (f flops) perTransition(engine string, penalty bool, m, horizon int) float64 {
	engine = strings.TrimPrefix(engine, "device-") // a device engine does its style's work
	mf, hf := float64(m), float64(horizon)
	switch {
	case engine == "direct" && !penalty: // packed graph: the drawn k's steps only
		return f.actor + f.gruFirst + (mf-1)/2*f.gruStep + f.head
	case engine == "direct": // every k = 1..m, each its own k steps
		return f.actor + mf*f.gruFirst + mf*(mf-1)/2*f.gruStep + mf*f.head
	default: // incremental: m cached plans (one new) advance one step, m heads,
		// plus the start windows' replay spread over the H steps
		replay := (mf-1)*f.gruFirst + (mf-1)*(mf-2)/2*f.gruStep + mf*(mf-1)/2*f.head
		return f.actor + f.gruFirst + (mf-1)*f.gruStep + mf*f.head + replay/hf
	}
}

// Rollout measures the direct and incremental ADM-Roll engines with random
// models of the configured size, without (ADMPO-ON) and with (ADMPO-OFF)
// the U^ADM penalty.
func Rollout(c RolloutConfig) (*Table, error) {
	rng := rand.New(rand.NewSource(1))
	low, high := make([]float64, c.ActDim), make([]float64, c.ActDim)
	for i := range low {
		low[i], high[i] = -1, 1
	}
	actor := models.NewActor(c.ObsDim, low, high, []int{256, 256}, rng)
	adm, err := models.NewADM(models.ADMConfig{ObsDim: c.ObsDim, ActDim: c.ActDim, Hidden: c.Hidden, Layers: c.Layers,
		ResBlocks: c.Blocks, M: c.M}, rng)
	if err != nil {
		return nil, err
	}
	for i := range adm.Out.W { // small predicted deltas keep roll-outs bounded
		adm.Out.W[i] *= 0.01
	}
	ab, err := onnx.ExportActor(actor, nil)
	if err != nil {
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	var extra []infer.BenchEngine
	for _, name := range DeviceEngines {
		if c.Device == nil || !slices.Contains(c.Engines, name) {
			continue
		}
		r, err := c.deviceRoller(name, adm, actor)
		if err != nil {
			return nil, err
		}
		defer r.Free()
		extra = append(extra, infer.BenchEngine{Name: name, Roller: r, M: c.M})
	}
	var direct, step []byte
	if c.wants("direct") {
		form, ferr := admForm(c.Form)
		if ferr != nil {
			return nil, ferr
		}
		if direct, err = onnx.ExportADM(adm, onnx.ADMOptions{Form: form, Dropout: c.Dropout}, nil); err != nil {
			return nil, err
		}
	}
	stepForm := onnx.ADMUnrolled // the incremental engine's; the step graph has no packed form
	if c.Form == "gru" {
		stepForm = onnx.ADMGRUOp
	}
	if c.wants("incremental") {
		if step, err = onnx.ExportADMStepWith(adm, onnx.ADMStepOptions{Form: stepForm, Dropout: c.Dropout}, nil); err != nil {
			return nil, err
		}
	}
	blasPeak := blas.PeakSgemm(1024, 5)
	// With CUDA each call copies its input from and its output to host
	// memory; a larger product keeps that from dominating the reference.
	peakN := 1024
	if (infer.Options{Provider: c.Provider}).CUDA() {
		peakN = 4096
	}
	peak, err := ortPeakSgemm(peakN, 5, c.Provider)
	if err != nil {
		return nil, err
	}
	t := &Table{Title: "admpo bench rollout: ADM-Roll transitions/s (higher is better)", Header: machine(),
		Columns: []string{"style", "engine", "rows", "H", "transitions/s", "per CPU-second", "GFLOP/s", "% of ORT MatMul peak"}}
	t.Header["sgemm peak (1024^3, OpenBLAS)"] = fmt.Sprintf("%.0f GFLOP/s", blasPeak)
	t.Header[fmt.Sprintf("MatMul peak (%d^3, ONNX Runtime)", peakN)] = fmt.Sprintf("%.0f GFLOP/s (the %% column's reference)", peak)
	provider := "cpu"
	if c.Provider != "" {
		provider = strings.ToLower(c.Provider)
	}
	t.Header["provider"] = provider
	if provider == "cuda" {
		dev, err := infer.CUDADevice()
		if err != nil {
			return nil, err
		}
		t.Header["cuda device"] = dev
		t.Header["ort version"] = infer.RuntimeVersion()
		t.Header["MatMul peak note"] = "with CUDA the peak's calls include the copies of x from and y to host memory, as the engines' calls do"
	}
	chunk := "8192 (infer's default)"
	if c.ChunkRows > 0 {
		chunk = strconv.Itoa(c.ChunkRows)
	}
	if c.Device != nil {
		t.Header["device"] = c.Device.Name()
		if c.ChunkRows <= 0 {
			chunk += fmt.Sprintf("; device engines: %d (their default on %s)", dynamics.DevChunkRows[strings.ToLower(c.DeviceName)], c.DeviceName)
		}
	}
	t.Header["chunk rows"] = chunk
	form := c.Form
	if form == "" {
		form = "packed"
	}
	t.Header["direct ADM form"] = form
	t.Header["incremental step graph form"] = stepForm.String()
	binding := c.Binding
	if binding == "" {
		binding = infer.BindingAuto
	}
	t.Header["model"] = fmt.Sprintf("obs %d, act %d, m %d, GRU %dx%d, %d ResBlocks, actor 256x256", c.ObsDim, c.ActDim, c.M, c.Layers, c.Hidden, c.Blocks)
	t.Header["ort threads"] = strconv.Itoa(c.Threads) + " per call (0: 1 per call, one concurrent call per CPU)"
	t.Header["engine split"] = fmt.Sprintf("workers %d, rows per call %d (0: infer's defaults)", c.Workers, c.BatchRows)
	t.Header["MC dropout"] = strconv.FormatFloat(c.Dropout, 'g', -1, 64) + " (0: none; --rollout-dropout: 0.1)"
	f := countFlops(c)
	for _, penalty := range []bool{false, true} {
		style := "ADMPO-ON (no penalty)"
		if penalty {
			style = "ADMPO-OFF (U^ADM)"
		}
		for _, rows := range c.Rows {
			res, err := infer.BenchRollout(infer.BenchConfig{Actor: ab, ADM: direct, ADMStep: step, Rows: rows,
				Horizon: c.Horizon, Penalty: penalty, Threads: c.Threads, Workers: c.Workers, BatchRows: c.BatchRows,
				Provider: c.Provider, Binding: c.Binding, Repeats: c.Repeats, ChunkRows: c.ChunkRows, Seed: 3,
				Profile: c.ORTProfile, Extra: extra})
			if err != nil {
				return nil, err
			}
			for _, r := range res {
				if r.State != "" {
					t.Header["incremental state"] = r.State + " (--binding " + binding + ")"
				}
				g := r.PerSecond * f.perTransition(r.Engine, penalty, c.M, c.Horizon) / 1e9
				t.Rows = append(t.Rows, []any{style, r.Engine, rows, c.Horizon, r.PerSecond, r.PerCPUSecond, g, 100 * g / peak})
			}
		}
	}
	t.Notes = append(t.Notes, "GFLOP/s counts the matrix products each engine executes: direct runs each plan's own k GRU steps (the packed graph; every k = 1..m with U^ADM); incremental advances m cached plans by one step, runs m heads and replays the start windows once; first steps skip the recurrent products",
		"per CPU-second: transitions per second of the process's CPU time (all threads), the rate independent of the machine's other load",
		"direct uses the "+form+" ADM graph, incremental the "+stepForm.String()+" step graph (--form); each engine cuts a step into ONNX Runtime calls run by concurrent workers (infer.Options Workers, BatchRows)")
	if c.Device != nil {
		t.Notes = append(t.Notes, "device-direct, device-incremental: the ADM rolled out on the device "+c.DeviceName+" (dynamics.DevRoller, rolldev.Engine in direct's or incremental's style: the actor, the plans, the sample and U^ADM there, the random numbers drawn on the host in infer's order, so their transitions equal direct's and incremental's within float32 rounding at the same chunk rows); GFLOP/s counts the ONNX Runtime style's work, and the % column is of ONNX Runtime's MatMul peak")
	}
	return t, nil
}
