package main

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/cpukern"
)

// command is one `admpo <name>` sub-command.
type command struct {
	name    string
	summary string
	run     func(args []string) error
}

// commandList is every command, in the order of `admpo help`.
var commandList = []*command{
	{name: "bench", summary: "benchmark training steps (vs PyTorch) and roll-out throughput", run: runBench},
	{name: "collect", summary: "collect a D4RL-style offline data set (random, medium, expert, ...)", run: runCollect},
	{name: "convert", summary: "convert a data set between D4RL HDF5 and Minari", run: runConvert},
	{name: "doctor", summary: "check that MuJoCo, OpenBLAS and ONNX Runtime are installed and usable; report the GPU pieces", run: runDoctor},
	{name: "envs", summary: "list the MuJoCo tasks or run a random policy in one", run: runEnvs},
	{name: "eval", summary: "play a policy bundle in its task: return mean/std and D4RL normalised score", run: runEval},
	{name: "experiment", summary: "the paper's model studies: compounding-error, uncertainty, m-sweep", run: runExperiment},
	{name: "export", summary: "turn a finished run into a deployable policy bundle", run: runExport},
	{name: "pipeline", summary: "quick end-to-end run: train ADMPO-ON, export, benchmark roll-outs, evaluate", run: runPipeline},
	{name: "plot", summary: "draw learning curves of run directories and print a summary", run: runPlot},
	{name: "promote", summary: "ship a behaviour run's snapshot as the medium or expert policy of `admpo collect`", run: runPromote},
	{name: "serve", summary: "serve a policy bundle over HTTP (actions + U^ADM monitor)", run: runServe},
	{name: "sweep", summary: "run a grid of training runs locally, or write a Slurm job array or Kubernetes Indexed Job for it", run: runSweep},
	{name: "train", summary: "train online (ADMPO-ON, MBPO, SAC) or offline (ADMPO-OFF, MOPO, BC)", run: runTrain},
	{name: "version", summary: "print admpo's version, commit and Go toolchain", run: runVersion},
}

// commands indexes commandList by name.
var commands = func() map[string]*command {
	m := map[string]*command{}
	for _, c := range commandList {
		m[c.name] = c
	}
	return m
}()

// errUsage marks an error whose message is a usage problem (exit code 2).
var errUsage = errors.New("usage")

func main() {
	blas.EnsureCoreType() // re-execs with OPENBLAS_CORETYPE when it is unset
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if err := cpukern.EnvError(); err != nil {
		fmt.Fprintf(os.Stderr, "admpo: %v\n", err)
		return 2
	}
	if len(args) > 0 && args[0] == "--version" {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			// admpo help CMD [SUB...]: that (sub-)command's --help.
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(os.Stderr, "admpo: help: unknown command %q\n\n", args[1])
				usage(os.Stderr)
				return 2
			}
			return exitCode(c.run(append(append([]string(nil), args[2:]...), "--help")))
		}
		usage(os.Stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "admpo: unknown command %q\n\n", args[0])
		usage(os.Stderr)
		return 2
	}
	return exitCode(c.run(args[1:]))
}

func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "admpo:", err)
		return 2
	default:
		fmt.Fprintln(os.Stderr, "admpo: error:", err)
		return 1
	}
}

func usage(w *os.File) {
	fmt.Fprintln(w, "admpo: model-based RL with the Any-step Dynamics Model (ADM)")
	fmt.Fprintln(w, "\nUsage: admpo <command> [flags]\n\nCommands:")
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `admpo <command> --help` (or `admpo help <command> [sub-command]`) for the flags of a command.")
}

// runGroup runs a command made of sub-commands: args[0] names the
// sub-command (a key of subs), which gets the rest of args. With no
// arguments it prints help to stderr and returns a usage error saying what
// is missing; with --help or -h it prints help to stdout; an unknown name
// is the usage error unknown, a format with %q for the name.
func runGroup(args []string, help, missing, unknown string, subs map[string]func([]string) error) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, help)
		return fmt.Errorf("%w: %s", errUsage, missing)
	}
	if args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(os.Stdout, help)
		return nil
	}
	sub, ok := subs[args[0]]
	if !ok {
		return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(unknown, args[0]))
	}
	return sub(args[1:])
}

// newFlags returns a flag set whose --help prints a description and the flags.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() { // only on --help (ContinueOnError): to stdout
		synopsis, description := commandHelp(name)
		fmt.Fprintf(os.Stdout, "Usage: admpo %s\n\n%s\n\nFlags:\n%s", synopsis, description, fs.FlagUsages())
	}
	return fs
}

// helpFiles holds each command's help: help/NAME.txt (spaces in the name as
// dashes), the synopsis on the first line, a blank line, then the text.
//
//go:embed help/*.txt
var helpFiles embed.FS

// commandHelp returns a command's synopsis and description from helpFiles.
func commandHelp(name string) (synopsis, description string) {
	b, err := helpFiles.ReadFile("help/" + strings.ReplaceAll(name, " ", "-") + ".txt")
	if err != nil {
		return name, "(no help text: " + err.Error() + ")"
	}
	synopsis, description, _ = strings.Cut(string(b), "\n")
	return strings.TrimSpace(synopsis), strings.TrimSpace(description)
}

// parsedHook, when set (tests), sees every flag set that parse is given.
var parsedHook func(*pflag.FlagSet)

// parse parses args, rejects stray positional arguments and checks every
// given numeric flag against its declared span (checkBounds).
func parse(fs *pflag.FlagSet, args []string) error {
	if parsedHook != nil {
		parsedHook(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %v (see `admpo %s --help`)", errUsage, fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s: unexpected argument %q (see `admpo %s --help`)", errUsage, fs.Name(), fs.Arg(0), fs.Name())
	}
	return checkBounds(fs)
}
