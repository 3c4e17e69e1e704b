package infer

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime/pprof"
	"syscall"
	"time"
)

// BenchConfig describes a roll-out throughput measurement. The models are
// given as exported ONNX bytes (infer does not build models itself).
type BenchConfig struct {
	Actor   []byte // exported SAC actor (onnx.ExportActor)
	ADM     []byte // exported ADM (onnx.ExportADM) for the direct engine; nil skips it
	ADMStep []byte // exported ADM step (onnx.ExportADMStep) for the incremental engine; nil skips it
	Rows    int    // start rows rolled out together (e.g. 10000)
	Horizon int    // model steps per row (H)
	// Penalty computes U^ADM and subtracts it from the reward (ADMPO-OFF
	// style); false is the ADMPO-ON roll-out without uncertainty.
	Penalty bool
	Threads int // ONNX Runtime intra-op threads (Options.Threads)
	// Workers and BatchRows are the engines' Options.Workers and
	// Options.BatchRows (0: their defaults).
	Workers, BatchRows int
	// Provider is the execution provider ("cpu" when empty, or "cuda").
	Provider string
	// Binding is the engines' Options.Binding (auto when empty: the
	// incremental engine runs on bound buffers with CUDA).
	Binding string
	// ChunkRows is RollConfig.ChunkRows (0: the default).
	ChunkRows int
	// Repeats is how many timed roll-outs each engine runs; the fastest
	// counts. 0 means 1.
	Repeats int
	// Seed seeds the start batch and the roll-outs.
	Seed int64
	// Profile is Options.Profile: ONNX Runtime's profiling of every
	// session (the policy's and the engines'), for where a roll-out's time
	// goes inside ONNX Runtime; empty: off.
	Profile string
	// Extra are further engines timed after ONNX Runtime's, the same way
	// and from the same starts.
	Extra []BenchEngine
}

// BenchEngine is a roll-out engine that BenchRollout times beside its own
// (e.g. a device roller, which package infer never builds); its caller
// closes it.
type BenchEngine struct {
	Name   string
	Roller Roller
	M      int // the ADM's maximum backtracking length (the start windows')
}

// BenchResult is one engine's measured throughput.
type BenchResult struct {
	Engine      string  // "direct" or "incremental"
	Transitions int     // transitions produced by one roll-out (Rows·Horizon)
	Seconds     float64 // wall time of the fastest roll-out
	PerSecond   float64 // Transitions / Seconds
	// CPUSeconds is the process's CPU time (all threads, user + system)
	// during the roll-out with the least of it; PerCPUSecond =
	// Transitions / CPUSeconds is the work rate independent of how much
	// of a shared machine the process gets.
	CPUSeconds   float64
	PerCPUSecond float64
	// State says where the incremental engine kept its hidden states:
	// "bound" (ONNX Runtime buffers, I/O binding), "copied" (Go memory,
	// copied every step), or "copied (<why it could not bind>)"; empty
	// for the direct engine.
	State string
}

// BenchRollout measures the transitions per second of the direct and the
// incremental ADM-Roll engines on the given models. Every start row holds a
// full window of m random states (N(0, 0.5²)) and actions (uniform in
// [-1, 1]); no row terminates, so each roll-out yields Rows·Horizon
// transitions. A small untimed roll-out warms each engine up first.
func BenchRollout(cfg BenchConfig) ([]BenchResult, error) {
	if cfg.Rows <= 0 || cfg.Horizon <= 0 {
		return nil, fmt.Errorf("infer: bench: rows (%d) and horizon (%d) must be positive", cfg.Rows, cfg.Horizon)
	}
	if cfg.ADM == nil && cfg.ADMStep == nil && len(cfg.Extra) == 0 {
		return nil, errors.New("infer: bench: no ADM model given")
	}
	opts := Options{Provider: cfg.Provider, Threads: cfg.Threads, Workers: cfg.Workers, BatchRows: cfg.BatchRows, Binding: cfg.Binding, Profile: cfg.Profile}
	p, err := OpenPolicy(cfg.Actor, opts)
	if err != nil {
		return nil, fmt.Errorf("infer: bench: %w", err)
	}
	defer p.Close()
	type engine struct {
		name  string
		r     stepper // nil for an Extra engine
		roll  Roller
		state string
	}
	var engines []engine
	defer func() {
		for _, e := range engines {
			if e.r != nil {
				e.roll.Close()
			}
		}
	}()
	if cfg.ADM != nil {
		d, err := OpenADMDirect(cfg.ADM, opts)
		if err != nil {
			return nil, fmt.Errorf("infer: bench: %w", err)
		}
		engines = append(engines, engine{"direct", d, d, ""})
	}
	if cfg.ADMStep != nil {
		s, err := OpenADMIncremental(cfg.ADMStep, opts)
		if err != nil {
			return nil, fmt.Errorf("infer: bench: %w", err)
		}
		state := "copied"
		switch {
		case s.Bound():
			state = "bound"
		case s.BindingError() != nil:
			state = "copied (" + s.BindingError().Error() + ")"
		}
		engines = append(engines, engine{"incremental", s, s, state})
	}
	m, od, ad := 0, p.ObsDim, p.ActDim
	for i, e := range engines {
		m2, od2, ad2 := e.r.dims()
		if i == 0 {
			m, od, ad = m2, od2, ad2
		} else if m2 != m || od2 != od || ad2 != ad {
			return nil, fmt.Errorf("infer: bench: the ADM (m %d, %dx%d) and ADM step (m %d, %dx%d) models differ", m, od, ad, m2, od2, ad2)
		}
	}
	for _, x := range cfg.Extra {
		if m == 0 {
			m = x.M
		}
		if x.M != m || x.M < 1 || x.Roller == nil {
			return nil, fmt.Errorf("infer: bench: engine %s: m %d (want %d) or no roller", x.Name, x.M, m)
		}
		engines = append(engines, engine{name: x.Name, roll: x.Roller})
	}
	start := benchStart(cfg.Rows, m, od, ad, rand.New(rand.NewSource(cfg.Seed)))
	rc := RollConfig{Horizon: cfg.Horizon, ChunkRows: cfg.ChunkRows}
	if cfg.Penalty {
		rc.Penalty = 1
	}
	repeats := max(cfg.Repeats, 1)
	var out []BenchResult
	for _, e := range engines {
		warm := *start
		warm.N = min(start.N, 256)
		warm.Len = start.Len[:warm.N]
		warm.Obs = start.Obs[:warm.N*m*od]
		warm.Act = start.Act[:warm.N*(m-1)*ad]
		if _, err := e.roll.Rollout(p, &warm, RollConfig{Horizon: 1, Penalty: rc.Penalty}, rand.New(rand.NewSource(cfg.Seed))); err != nil {
			return nil, fmt.Errorf("infer: bench: %s warm-up: %w", e.name, err)
		}
		best, bestCPU := -1.0, -1.0
		var n int
		var err error
		// The labels name the timed roll-outs in a CPU profile (admpo bench
		// rollout --cpuprofile).
		labels := pprof.Labels("engine", e.name, "penalty", fmt.Sprint(cfg.Penalty), "rows", fmt.Sprint(cfg.Rows))
		pprof.Do(context.Background(), labels, func(context.Context) {
			for i := 0; i < repeats; i++ {
				c0 := processCPU()
				t0 := time.Now()
				var tr *Transitions
				tr, err = e.roll.Rollout(p, start, rc, rand.New(rand.NewSource(cfg.Seed+1)))
				if err != nil {
					return
				}
				if s := time.Since(t0).Seconds(); best < 0 || s < best {
					best = s
				}
				if c := processCPU() - c0; bestCPU < 0 || c < bestCPU {
					bestCPU = c
				}
				n = tr.N
			}
		})
		if err != nil {
			return nil, fmt.Errorf("infer: bench: %s: %w", e.name, err)
		}
		out = append(out, BenchResult{Engine: e.name, Transitions: n, Seconds: best, PerSecond: float64(n) / best,
			CPUSeconds: bestCPU, PerCPUSecond: float64(n) / bestCPU, State: e.state})
	}
	return out, nil
}

// processCPU is the process's user + system CPU time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// benchStart is a batch of full windows of random states and actions.
func benchStart(rows, m, od, ad int, rng *rand.Rand) *Start {
	s := &Start{N: rows, M: m, Len: make([]int, rows), Obs: make([]float32, rows*m*od), Act: make([]float32, rows*(m-1)*ad)}
	for i := range s.Len {
		s.Len[i] = m
	}
	for i := range s.Obs {
		s.Obs[i] = float32(0.5 * rng.NormFloat64())
	}
	for i := range s.Act {
		s.Act[i] = float32(2*rng.Float64() - 1)
	}
	return s
}
