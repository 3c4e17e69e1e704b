package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// usageErr marks err as a usage problem (exit code 2), keeping its message.
func usageErr(err error) error { return fmt.Errorf("%w: %v", errUsage, err) }

// lookupTask returns the task that a command line names (an unknown one is
// a usage error).
func lookupTask(name string) (*envs.Task, error) {
	t, err := envs.Lookup(name)
	if err != nil {
		return nil, usageErr(err)
	}
	return t, nil
}

// parseTask parses a command's flags and returns the task that env, its
// --env flag, names.
func parseTask(fs *pflag.FlagSet, args []string, env *string) (*envs.Task, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return lookupTask(*env)
}

// interruptible is a context that Ctrl-C or SIGTERM cancels (long commands
// checkpoint and stop then); stop releases the signal handler.
func interruptible() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// onlyWithResume is a usage error naming the first flag given beside
// --resume other than resume itself and allowed: a resumed run keeps its
// config.
func onlyWithResume(fs *pflag.FlagSet, allowed ...string) error {
	var bad string
	fs.Visit(func(f *pflag.Flag) {
		if bad == "" && f.Name != "resume" && !slices.Contains(allowed, f.Name) {
			bad = f.Name
		}
	})
	if bad != "" {
		return fmt.Errorf("%w: %s: --%s cannot be given with --resume (a resumed run keeps its config; only --%s may change)",
			errUsage, fs.Name(), bad, strings.Join(allowed, ", --"))
	}
	return nil
}

// newRunDir is out, or runs/def when out is empty.
func newRunDir(out, def string) string {
	if out == "" {
		return filepath.Join("runs", def)
	}
	return out
}

// printRunConfig prints the config a run has saved as dir/config.json
// (call it after the run is created: the message says it was saved).
func printRunConfig(dir string, config []byte) {
	fmt.Printf("config (saved to %s/config.json):\n%s", dir, config)
}

// trainingRun is what a train.Online or train.Offline run offers the CLI.
type trainingRun interface {
	Run(ctx context.Context) error
	Step() int
	OnStatus(f func(train.Status))
	Close()
}

// freshStart is what a run directory held before a fresh run was created
// in it, so that a start that fails before recording anything can take
// back what it made: a failed start leaves nothing behind.
type freshStart struct {
	dir     string
	existed bool            // the directory was there before
	before  map[string]bool // its entries then
}

// noteFreshStart notes what dir holds now, before a fresh run is created
// in it.
func noteFreshStart(dir string) *freshStart {
	s := &freshStart{dir: dir, before: map[string]bool{}}
	ents, err := os.ReadDir(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		s.existed = true
	}
	for _, e := range ents {
		s.before[e.Name()] = true
	}
	return s
}

// recordedNothing reports whether the run in dir has written no checkpoint
// (from which --resume could go on) and no progress row (an evaluation or
// log step): only its config.json, the logs' headers and empty event files.
func recordedNothing(dir string) bool {
	d := rundir.Dir(dir)
	if _, err := os.Lstat(d.Checkpoint()); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if b, err := os.ReadFile(d.Progress()); err == nil && strings.Count(strings.TrimRight(string(b), "\n"), "\n") > 0 {
		return false // a row after the header
	}
	if st, err := os.Stat(d.Path(rundir.ProgressJSONLFile)); err == nil && st.Size() > 0 {
		return false
	}
	return true
}

// undo removes what the failed start made when its run recorded nothing
// (see recordedNothing): the directory, when the start made it, else the
// entries it added. It reports whether it removed anything.
func (s *freshStart) undo() bool {
	if s == nil || !recordedNothing(s.dir) {
		return false
	}
	if !s.existed {
		return os.RemoveAll(s.dir) == nil
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return false
	}
	removed := false
	for _, e := range ents {
		if !s.before[e.Name()] && os.RemoveAll(filepath.Join(s.dir, e.Name())) == nil {
			removed = true
		}
	}
	return removed
}

// failedStart is err of a fresh run's start in s.dir, after undo has taken
// back what the start made (the message then says so).
func (s *freshStart) failedStart(err error) error {
	if s.undo() {
		return fmt.Errorf("%w\n(the run had recorded nothing: what it had written in %s is removed)", err, s.dir)
	}
	return err
}

// runToEnd runs r in dir to its total steps (unit: "env step" or
// "update") with a progress display, and closes it. Ctrl-C or SIGTERM
// stops it after a checkpoint (train.ErrInterrupted) with a hint to resume.
// For a fresh run (fresh not nil), a failure before the run recorded
// anything removes what the start made (freshStart.undo).
func runToEnd(r trainingRun, dir string, total int, unit string, fresh *freshStart) error {
	err := runAndClose(r, dir, total, unit)
	if err != nil && !errors.Is(err, train.ErrInterrupted) && fresh != nil {
		return fresh.failedStart(err)
	}
	return err
}

// runAndClose is runToEnd without the clean-up of a failed start, which
// runs after it so that the run's files are closed before any is removed.
func runAndClose(r trainingRun, dir string, total int, unit string) error {
	defer r.Close()
	ctx, stop := interruptible()
	defer stop()
	if err := noteBuild(dir, r.Step(), os.Stderr); err != nil {
		return err
	}
	r.OnStatus(statusPrinter(total, r.Step()))
	start := time.Now()
	err := r.Run(ctx)
	if errors.Is(err, train.ErrInterrupted) {
		if f, ok := r.(interface{ FitInterruptedAt() int }); ok && f.FitInterruptedAt() > 0 {
			fmt.Printf("\ninterrupted in the model fit at epoch %d: checkpoint written; continue with --resume %s\n", f.FitInterruptedAt(), dir)
			return err
		}
		fmt.Printf("\ninterrupted at %s %d: checkpoint written; continue with --resume %s\n", unit, r.Step(), dir)
		return err
	}
	if err != nil {
		return err
	}
	fmt.Printf("\ndone: %d %ss in %s; run directory %s\n", total, unit, time.Since(start).Round(time.Second), dir)
	return nil
}

// addTensorBoardFlag registers --tensorboard; unit names the events' step.
func addTensorBoardFlag(fs *pflag.FlagSet, unit string) *bool {
	return fs.Bool("tensorboard", true, "write TensorBoard event files (OUT/events.out.tfevents.*): one event per evaluation at\n"+
		"its "+unit+" with the evaluation, losses, alpha, model holdout MSE per k, roll-out statistics and\n"+
		"steps per second; each start or resume writes a new file, a resume first dropping the events after its\n"+
		"checkpoint; --tensorboard=false writes none. View with: tensorboard --logdir runs")
}

// resumeRun opens the stopped run in dir with open (only --LENGTHFLAG,
// --tensorboard, --device and the flags in also may come with --resume;
// open gets --device's value, "" when not given, and moves the run's SAC
// updates there, and reads the flags in also itself) and, when
// --LENGTHFLAG was given, sets the run's new length with setLength.
func resumeRun[R interface{ Close() }](fs *pflag.FlagSet, dir, lengthFlag string, length int,
	open func(dir, device string) (R, error), setLength func(R, int) error, also ...string) (R, error) {
	var zero R
	if err := onlyWithResume(fs, append([]string{lengthFlag, "tensorboard", "device"}, also...)...); err != nil {
		return zero, err
	}
	dev := ""
	if fs.Changed("device") {
		dev = fs.Lookup("device").Value.String()
		if err := train.CheckDevice(dev); err != nil {
			return zero, usageErr(fmt.Errorf("--device: %w", err))
		}
	}
	r, err := open(dir, dev)
	if err != nil {
		return zero, err
	}
	if fs.Changed(lengthFlag) {
		if err := setLength(r, length); err != nil {
			r.Close()
			if errors.Is(err, errUsage) { // it names the flag itself
				return zero, err
			}
			return zero, usageErr(fmt.Errorf("--%s %d: %w", lengthFlag, length, err))
		}
	}
	return r, nil
}
