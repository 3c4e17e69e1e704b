package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/admpo/admpo/benchmarks"
)

func init() {
	register(&command{name: "bench", summary: "benchmark training steps (vs PyTorch) and roll-out throughput", run: runBench})
}

func runBench(args []string) error {
	help := "Usage: admpo bench train|rollout|serve [flags]   (see admpo bench <name> --help)\n"
	if done, err := groupHelp(args, help, "bench needs a sub-command: train, rollout or serve"); done {
		return err
	}
	switch args[0] {
	case "train":
		return benchTrain(args[1:])
	case "rollout":
		return benchRollout(args[1:])
	case "serve":
		return benchServe(args[1:])
	}
	return fmt.Errorf("%w: bench: unknown benchmark %q (train, rollout, serve)", errUsage, args[0])
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
	fs := newFlags("bench train", "bench train [--iters N] [--json]",
		"Times one SAC update (batch 256, 256x256 networks, hopper dims) and one ADM train step (m 5,\n"+
			"batch 256, 3x200 GRU, 4 ResBlocks, forward + backward + Adam) in admpo, and the same\n"+
			"computations in PyTorch (Debian's python3-torch via /usr/bin/python3) when installed, and prints\n"+
			"the medians side by side with their ratio. Run it on an otherwise idle machine.")
	iters := fs.Int("iters", 50, "timed iterations per measurement")
	noTorch := fs.Bool("no-torch", false, "skip the PyTorch baseline")
	threads := fs.Int("torch-threads", 2, "PyTorch threads")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	bound(fs, atLeast1, "iters", "torch-threads")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *iters <= 0 {
		return fmt.Errorf("%w: --iters must be positive", errUsage)
	}
	t, err := benchmarks.Train(*iters, !*noTorch, *threads)
	if err != nil {
		return err
	}
	return printTable(t, *asJSON)
}

func benchRollout(args []string) error {
	c := benchmarks.DefaultRolloutConfig()
	fs := newFlags("bench rollout", "bench rollout [--rows 10000,50000] [--horizon 5] [--json]",
		"Measures ADM-Roll throughput (transitions/s) of the direct and the incremental engines on ONNX\n"+
			"Runtime, without the uncertainty penalty (ADMPO-ON) and with U^ADM (ADMPO-OFF), for random\n"+
			"models of the paper's size (hopper dims, m 5, 3x200 GRU, 4 ResBlocks, 256x256 actor), and the\n"+
			"achieved GFLOP/s next to the measured MatMul peak of ONNX Runtime (and of OpenBLAS).")
	fs.IntSliceVar(&c.Rows, "rows", c.Rows, "start rows per roll-out (comma-separated)")
	fs.IntVar(&c.Horizon, "horizon", c.Horizon, "roll-out length H")
	fs.IntVar(&c.M, "m", c.M, "maximum backtracking length")
	fs.IntVar(&c.Threads, "threads", 0, "ONNX Runtime intra-op threads (0: its default)")
	fs.IntVar(&c.Repeats, "repeats", c.Repeats, "timed roll-outs per engine (the fastest counts)")
	fs.StringVar(&c.Provider, "provider", "cpu", "ONNX Runtime provider: cpu or cuda")
	fs.Float64Var(&c.Dropout, "dropout", 0, "MC dropout probability in the ADM graphs, below 1 (0: none; --rollout-dropout rolls out with 0.1)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	bound(fs, atLeast1, "rows", "horizon", "m", "repeats")
	bound(fs, nonNeg, "threads")
	bound(fs, unit, "dropout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if c.Dropout >= 1 {
		return usageErr(fmt.Errorf("--dropout %v: a dropout probability must be below 1", c.Dropout))
	}
	t, err := benchmarks.Rollout(c)
	if err != nil {
		return err
	}
	return printTable(t, *asJSON)
}

func benchServe(args []string) error {
	fs := newFlags("bench serve", "bench serve [--bundle BUNDLE] [--duration 60s] [--json]",
		"Measures in-process act latency at batch 1 (p50/p99) on ONNX Runtime and on the pure-Go runtime,\n"+
			"then serves the policy on a loopback port and loads it from a bounded client in the same process\n"+
			"(requests/s, p50/p99, errors) for each --concurrency value. Without --bundle a random hopper-sized\n"+
			"actor is used.")
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
