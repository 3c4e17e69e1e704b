package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/admpo/admpo/benchmarks"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

func runBench(args []string) error {
	return runGroup(args, "Usage: admpo bench train|rollout|serve [flags]   (see admpo bench <name> --help)\n",
		"bench needs a sub-command: train, rollout or serve", "bench: unknown benchmark %q (train, rollout, serve)",
		map[string]func([]string) error{"train": benchTrain, "rollout": benchRollout, "serve": benchServe})
}

func printTable(t *benchmarks.Table, asJSON bool) error {
	if asJSON {
		b, err := t.JSON()
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	return t.Fprint(os.Stdout)
}

func benchTrain(args []string) error {
	fs := newFlags("bench train")
	iters := fs.Int("iters", 50, "timed iterations per measurement")
	noTorch := fs.Bool("no-torch", false, "skip the PyTorch baseline")
	threads := fs.Int("threads", 1, "threads of admpo's training engine (products split over rows, element-wise loops)")
	torchThreads := fs.Int("torch-threads", 0, "PyTorch threads (0: the same as --threads)")
	kernels := fs.String("kernels", "auto", "CPU kernel path: auto (the best this CPU has), avx512, avx2 or generic")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	from := fs.String("from", "", "also time the SAC update of this run directory's agent as its checkpoint left it (a trained agent's\n"+
		"state can cost otherwise than fresh networks: e.g. Adam moments of dead ReLU units; network sizes from the checkpoint,\n"+
		"the batch size from config.json)")
	dev := fs.String("device", "cpu", "also time the SAC update and the ADM's and the ensemble's train steps on this device, beside the CPU's: emu (the kernels\n"+
		"emulated on the host) or cuda (the GPU; a binary built with the admpo_cuda tag); cpu: the CPU rows only")
	bound(fs, atLeast1, "iters", "threads")
	bound(fs, nonNeg, "torch-threads")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *iters <= 0 {
		return fmt.Errorf("%w: --iters must be positive", errUsage)
	}
	if *kernels != "auto" {
		isa, err := cpukern.Parse(*kernels)
		if err == nil {
			err = cpukern.Use(isa)
		}
		if err != nil {
			return usageErr(fmt.Errorf("--kernels: %w", err))
		}
	}
	if *torchThreads == 0 {
		*torchThreads = *threads
	}
	blas.SetThreads(*threads)
	runtime.GOMAXPROCS(*threads)
	if err := train.CheckDevice(*dev); err != nil {
		return usageErr(fmt.Errorf("--device: %w", err))
	}
	if *from != "" {
		if _, err := os.Stat(rundir.Dir(*from).Checkpoint()); err != nil {
			return usageErr(fmt.Errorf("--from %s: no checkpoint of a run there: %w", *from, err))
		}
	}
	t, err := benchmarks.Train(*iters, !*noTorch, *torchThreads, *from)
	if err != nil {
		return err
	}
	if d := strings.ToLower(*dev); d != "" && d != "cpu" {
		dt, err := train.BenchDeviceUpdate(d, *iters, true)
		if err != nil {
			return err
		}
		t.Header["device"] = dt.Name
		t.Rows = append(t.Rows,
			[]any{fmt.Sprintf("SAC update total on %s (batch on the device)", d), dt.Update, nil, nil},
			[]any{fmt.Sprintf("SAC update on %s as a run does it (noise, upload, update; no loss read-back)", d), dt.RunPath, nil, nil})
		if dt.GraphUpdate > 0 {
			t.Rows = append(t.Rows,
				[]any{fmt.Sprintf("SAC update total on %s, one device graph per update (%s=1)", d, train.GraphEnv), dt.GraphUpdate, nil, nil},
				[]any{fmt.Sprintf("SAC update on %s as a run does it, one device graph per update", d), dt.GraphRunPath, nil, nil})
		}
		t.Rows = append(t.Rows,
			[]any{fmt.Sprintf("ADM train step on %s (batch on the device)", d), dt.ADMStep, nil, nil},
			[]any{fmt.Sprintf("ADM train step on %s as a fit does it (upload, step; no loss read-back)", d), dt.ADMFitPath, nil, nil})
		if dt.ADMGraphStep > 0 {
			t.Rows = append(t.Rows,
				[]any{fmt.Sprintf("ADM train step on %s, one device graph per step (%s=1)", d, train.GraphEnv), dt.ADMGraphStep, nil, nil},
				[]any{fmt.Sprintf("ADM train step on %s as a fit does it, one device graph per step", d), dt.ADMGraphFitPath, nil, nil})
		}
		t.Rows = append(t.Rows,
			[]any{fmt.Sprintf("ensemble train step on %s (7x 4x200, batch 256 each, on the device)", d), dt.EnsStep, nil, nil},
			[]any{fmt.Sprintf("ensemble train step on %s as a fit does it (upload, step; no loss read-back)", d), dt.EnsFitPath, nil, nil})
		if dt.EnsGraphStep > 0 {
			t.Rows = append(t.Rows,
				[]any{fmt.Sprintf("ensemble train step on %s, one device graph per step (%s=1)", d, train.GraphEnv), dt.EnsGraphStep, nil, nil},
				[]any{fmt.Sprintf("ensemble train step on %s as a fit does it, one device graph per step", d), dt.EnsGraphFitPath, nil, nil})
		}
	}
	return printTable(t, *asJSON)
}

func benchRollout(args []string) error {
	c := benchmarks.DefaultRolloutConfig()
	fs := newFlags("bench rollout")
	fs.IntSliceVar(&c.Rows, "rows", c.Rows, "start rows per roll-out (comma-separated)")
	fs.IntVar(&c.Horizon, "horizon", c.Horizon, "roll-out length H")
	fs.IntVar(&c.M, "m", c.M, "maximum backtracking length")
	fs.IntVar(&c.Threads, "threads", 0, "ONNX Runtime intra-op threads (0: its default)")
	fs.IntVar(&c.Repeats, "repeats", c.Repeats, "timed roll-outs per engine (the fastest counts)")
	fs.StringVar(&c.Provider, "provider", "cpu", "ONNX Runtime provider: cpu or cuda (cuda: an admpo_cuda build, `make setup-gpu`, ADMPO_ORT_LIB=<its dir>/libonnxruntime.so.1)")
	fs.Float64Var(&c.Dropout, "dropout", 0, "MC dropout probability in the ADM graphs, below 1 (0: none; --rollout-dropout rolls out with 0.1)")
	fs.IntVar(&c.ChunkRows, "chunk-rows", 0, "start rows rolled out together in one step (0: infer's default, 8192 on the cpu, 32768 with cuda)")
	fs.IntVar(&c.Workers, "workers", 0, "concurrent ONNX Runtime calls per engine, each on a piece of a step's rows (0: infer's default, one per CPU on the cpu, 4 with cuda)")
	fs.IntVar(&c.BatchRows, "batch-rows", 0, "rows per ONNX Runtime call at most (0: infer's default, 1024 on the cpu, no cap with cuda)")
	fs.StringSliceVar(&c.Engines, "engines", []string{"direct", "incremental"}, "engines to measure: direct, incremental (ONNX Runtime's) and, with --device,\n"+
		strings.Join(benchmarks.DeviceEngines, ", ")+" (comma-separated; default: direct, incremental, and the device engines with --device)")
	dev := fs.String("device", "cpu", "also time the device engines ("+strings.Join(benchmarks.DeviceEngines, ", ")+": the ADM rolled out on a device, as train's\n"+
		"--rollout-device does) beside ONNX Runtime's, from the same starts: emu (the kernels emulated on the host) or cuda\n"+
		"(the GPU; a binary built with the admpo_cuda tag); cpu: ONNX Runtime's engines only. Their chunk rows: --chunk-rows,\n"+
		"else 8192 on emu and 131072 on cuda")
	fs.StringVar(&c.Binding, "binding", infer.BindingAuto, "the incremental engine's GRU states: auto (in ONNX Runtime's buffers with cuda, I/O binding; copied through Go memory on the cpu), on or off")
	fs.StringVar(&c.Form, "form", "packed", "the ADM graphs' form: packed (the direct engine's rows each run their own k steps), unrolled (all m steps for every row) or gru (one ONNX GRU op per layer in both engines' graphs, each direct row's k as its sequence_lens; cuDNN's RNN with cuda); the incremental engine's step graph is unrolled unless gru")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole benchmark to this file (the timed roll-outs carry the pprof labels engine, penalty and rows; ONNX Runtime's time shows under runtime.cgocall)")
	fs.StringVar(&c.ORTProfile, "ort-profile", "", "turn on ONNX Runtime's profiling: each roll-out session writes a JSON trace of its nodes' times (operator, provider; with cuda the host side of each node) to PREFIX-N_<date>_<time>.json when it closes (scripts/gpu_ort_profile.py sums them per operator)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	bound(fs, atLeast1, "rows", "horizon", "m", "repeats")
	bound(fs, nonNeg, "threads", "chunk-rows", "workers", "batch-rows")
	bound(fs, unit, "dropout")
	if err := parse(fs, args); err != nil {
		return err
	}
	d := strings.ToLower(*dev)
	if d != "" && d != "cpu" {
		if err := train.CheckRolloutDevice(d); err != nil {
			return usageErr(fmt.Errorf("--device: %w", err))
		}
		if !fs.Changed("engines") {
			c.Engines = append(c.Engines, benchmarks.DeviceEngines...)
		}
	} else if err := train.CheckDevice(d); err != nil {
		return usageErr(fmt.Errorf("--device: %w", err))
	}
	if len(c.Engines) == 0 {
		return usageErr(fmt.Errorf("--engines: name at least one engine (direct, incremental)"))
	}
	if d != "" && d != "cpu" {
		dv, err := train.OpenDevice(d)
		if err != nil {
			return fmt.Errorf("bench rollout: %w", err)
		}
		defer dv.Close()
		c.Device, c.DeviceName = dv, d
	}
	if err := c.Check(); err != nil {
		return usageErr(fmt.Errorf("--engines/--form: %w", err))
	}
	if err := infer.CheckBinding(c.Binding); err != nil {
		return usageErr(fmt.Errorf("--binding: %w", err))
	}
	if c.Dropout >= 1 {
		return usageErr(fmt.Errorf("--dropout %v: a dropout probability must be below 1", c.Dropout))
	}
	if err := infer.CheckProvider(c.Provider); err != nil {
		return usageErr(fmt.Errorf("--provider: %w", err))
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench rollout: --cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("bench rollout: --cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bench rollout: --cpuprofile %s: %v\n", *cpuProfile, err)
			}
		}()
	}
	t, err := benchmarks.Rollout(c)
	if err != nil {
		return err
	}
	return printTable(t, *asJSON)
}

func benchServe(args []string) error {
	fs := newFlags("bench serve")
	bundle := fs.String("bundle", "", "bundle directory (default: a random actor)")
	calls := fs.Int("calls", 20000, "timed in-process calls per runtime")
	conc := fs.IntSlice("concurrency", []int{1, 4}, "client connections, one load run each")
	dur := fs.Duration("duration", 60*time.Second, "length of each HTTP load run")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	bound(fs, atLeast1, "calls", "concurrency")
	bound(fs, positive, "duration")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *calls <= 0 || *dur <= 0 {
		return fmt.Errorf("%w: --calls and --duration must be positive", errUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	t, err := benchmarks.Serve(ctx, benchmarks.ServeConfig{Bundle: *bundle, Calls: *calls, Concurrency: *conc, Duration: *dur})
	if err != nil {
		return err
	}
	return printTable(t, *asJSON)
}
