package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/internal/tbevent"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/train"
)

// invocations are every command (and sub-command) that parses flags.
var invocations = [][]string{
	{"train", "online"}, {"train", "offline"}, {"collect"}, {"promote"}, {"export"}, {"serve"}, {"doctor"},
	{"envs", "list"}, {"envs", "run"}, {"envs", "show"}, {"envs", "serve"}, {"experiment", "compounding-error"},
	{"experiment", "uncertainty"}, {"experiment", "m-sweep"}, {"pipeline"}, {"plot"}, {"bench", "train"},
	{"bench", "rollout"}, {"bench", "serve"}, {"eval"}, {"version"}, {"sweep"},
}

// flagsOf returns the flag set that the command parses (seen through
// parsedHook on a --help call, which does no work).
func flagsOf(t *testing.T, inv []string) *pflag.FlagSet {
	t.Helper()
	var fs *pflag.FlagSet
	parsedHook = func(f *pflag.FlagSet) { fs = f }
	defer func() { parsedHook = nil }()
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull) // --help prints there
	err := commands[inv[0]].run(append(append([]string(nil), inv[1:]...), "--help"))
	os.Stdout = stdout
	if fs == nil || (err != nil && !errors.Is(err, pflag.ErrHelp)) {
		t.Fatalf("admpo %s --help: %v (flag set seen: %v)", strings.Join(inv, " "), err, fs != nil)
	}
	return fs
}

// badValues are values outside a flag's declared span (NaN and infinities
// for every float flag).
func badValues(f *pflag.Flag) []string {
	a := f.Annotations[boundKey]
	lo, _ := strconv.ParseFloat(a[0], 64)
	hi, _ := strconv.ParseFloat(a[1], 64)
	open := a[2] == "true"
	var out []string
	isFloat := f.Value.Type() == "float64"
	switch f.Value.Type() {
	case "duration":
		out = []string{"-1s"}
		if open {
			out = append(out, strconv.FormatFloat(lo, 'g', -1, 64)+"s")
		}
		if !math.IsInf(hi, 1) {
			out = append(out, strconv.FormatFloat(hi+1, 'g', -1, 64)+"s")
		}
		return out
	}
	if !math.IsInf(lo, -1) {
		if open {
			out = append(out, strconv.FormatFloat(lo, 'g', -1, 64))
		} else if isFloat {
			out = append(out, strconv.FormatFloat(lo-0.5, 'g', -1, 64))
		} else {
			out = append(out, strconv.FormatFloat(lo-1, 'g', -1, 64), "-5")
		}
	}
	if !math.IsInf(hi, 1) {
		out = append(out, strconv.FormatFloat(hi+1, 'g', -1, 64))
	}
	if isFloat {
		out = append(out, "NaN", "Inf", "-Inf", "1e400")
	}
	return out
}

// TestEveryNumericFlagRejectsBadValues feeds every numeric flag of every
// command values outside its range: each must be a usage error (exit 2)
// naming the flag, before any work (no panic, no silent default).
func TestEveryNumericFlagRejectsBadValues(t *testing.T) {
	tested := 0
	for _, inv := range invocations {
		fs := flagsOf(t, inv)
		if err := checkBounds(fs); err != nil {
			t.Errorf("admpo %s: %v", strings.Join(inv, " "), err)
			continue
		}
		fs.VisitAll(func(f *pflag.Flag) {
			if !numericTypes[f.Value.Type()] {
				return
			}
			for _, v := range badValues(f) {
				args := append(append([]string(nil), inv[1:]...), "--"+f.Name+"="+v)
				err := commands[inv[0]].run(args)
				if !errors.Is(err, errUsage) || exitCode(err) != 2 || !strings.Contains(err.Error(), "--"+f.Name) {
					t.Errorf("admpo %s %s: %v, want a usage error naming --%s", inv[0], strings.Join(args, " "), err, f.Name)
				}
				tested++
			}
		})
	}
	// The cases of issue 13 by name.
	for _, args := range [][]string{{"online", "--hidden=0"}, {"online", "--steps", "0"}, {"online", "--steps", "-5"},
		{"offline", "--epochs", "0"}, {"online", "--hidden", "256,0"}} {
		if err := runTrain(args); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[1][:strings.IndexAny(args[1]+"=", "=")]) {
			t.Errorf("admpo train %s: %v, want a usage error naming the flag", strings.Join(args, " "), err)
		}
	}
	// A dropout probability of 1 is inside --dropout's [0, 1] span but not a
	// probability the graphs take.
	if err := runBench([]string{"rollout", "--dropout", "1"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--dropout") {
		t.Errorf("admpo bench rollout --dropout 1: %v, want a usage error naming --dropout", err)
	}
	if tested < 150 {
		t.Errorf("only %d bad values tested", tested)
	}
}

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	return captureFile(t, &os.Stdout, f)
}

// captureFile runs f with *file (os.Stdout or os.Stderr) redirected and
// returns what it wrote there.
func captureFile(t *testing.T, file **os.File, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	ferr := f()
	w.Close()
	*file = old
	return <-done, ferr
}

// TestDryRunPrintsTheAuthorsConfig: --dry-run prints config.json's content
// (the paper preset: the authors' values) and makes no run directory.
func TestDryRunPrintsTheAuthorsConfig(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "run")
	s, err := captureStdout(t, func() error {
		return trainOnline([]string{"--env", "walker2d", "--preset", "paper", "--dry-run", "--out", out})
	})
	if err != nil {
		t.Fatal(err)
	}
	var c train.OnlineConfig
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("dry-run output is no config: %v\n%s", err, s)
	}
	if c.Version != train.ConfigVersion || c.Steps != 200000 || c.WarmUp != 5000 || c.ActorEvery != 20 || c.Alpha != 1 ||
		!c.AutoAlpha || c.TargetEntropy != -3 || c.M != 2 || c.ModelRetain != 4 || c.Rollout != (train.Schedule{A: 0, B: 100000, From: 1, To: 10}) ||
		!c.RolloutDropout {
		t.Errorf("walker2d paper config: %+v", c)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("--dry-run made the run directory")
	}
	d := trainfix.RandomHopper(t, 200, 1)
	d.Meta = nil
	path := filepath.Join(tmp, "hopper-medium.hdf5")
	trainfix.WriteD4RL(t, path, d)
	s, err = captureStdout(t, func() error {
		return trainOffline([]string{"--dataset", path, "--preset", "paper", "--dry-run", "--out", out})
	})
	if err != nil {
		t.Fatal(err)
	}
	var oc train.OfflineConfig
	if err := json.Unmarshal([]byte(s), &oc); err != nil {
		t.Fatalf("dry-run output is no config: %v\n%s", err, s)
	}
	if oc.Name != "hopper-medium" || oc.AutoAlpha || oc.Alpha != 0.05 || oc.Epochs != 5000 || oc.M != 5 || oc.Horizon != 10 ||
		oc.Penalty != 1 || oc.ActorLRSchedule != "cosine-epoch" || !oc.RolloutDropout {
		t.Errorf("hopper-medium paper config: %+v", oc)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("--dry-run made the run directory")
	}
	// --rollout-dropout overrides the preset's (paper: on, quick: off) and
	// is a usage error naming it for MOPO, which has no ADM.
	for _, c := range []struct {
		args []string
		want bool
	}{{[]string{"--preset", "paper", "--rollout-dropout=false"}, false}, {[]string{"--preset", "quick"}, false},
		{[]string{"--preset", "quick", "--rollout-dropout"}, true}} {
		s, err := captureStdout(t, func() error {
			return trainOffline(append([]string{"--dataset", path, "--dry-run"}, c.args...))
		})
		if err != nil {
			t.Fatal(err)
		}
		var oc train.OfflineConfig
		if err := json.Unmarshal([]byte(s), &oc); err != nil || oc.RolloutDropout != c.want {
			t.Errorf("offline %v: rollout_dropout %v (err %v), want %v", c.args, oc.RolloutDropout, err, c.want)
		}
	}
	err = trainOffline([]string{"--dataset", path, "--algo", "mopo", "--rollout-dropout", "--dry-run"})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "rollout dropout") {
		t.Errorf("mopo --rollout-dropout: %v, want a usage error naming rollout dropout", err)
	}
	err = trainOnline([]string{"--algo", "mbpo", "--rollout-dropout", "--dry-run"})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "rollout dropout") {
		t.Errorf("mbpo --rollout-dropout: %v, want a usage error naming rollout dropout", err)
	}
}

// TestResumeTakesOnlySteps: beside --resume only --steps may be given; it
// sets the new length when that is not behind the run, else it is a usage
// error; any other flag is a usage error naming it.
func TestResumeTakesOnlySteps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run := []string{"--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20", "--out", dir}
	if _, err := captureStdout(t, func() error { return trainOnline(run) }); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--seed", "3"}, {"--batch", "16"}, {"--preset", "paper"}, {"--dry-run"}} {
		err := trainOnline(append([]string{"--resume", dir}, args...))
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("--resume with %v: %v, want a usage error naming %s", args, err, args[0])
		}
	}
	_, err := captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "10"}) })
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--steps") {
		t.Errorf("--resume --steps behind the run: %v, want a usage error naming --steps", err)
	}
	if _, err := captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "30"}) }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c train.OnlineConfig
	if err := json.Unmarshal(b, &c); err != nil || c.Steps != 30 {
		t.Errorf("config.json after --resume --steps 30: steps %d (%v)", c.Steps, err)
	}
	rows, err := train.ReadProgressCSV(filepath.Join(dir, "progress.csv"))
	if err != nil || len(rows) == 0 || rows[len(rows)-1].Step != 50 {
		t.Errorf("progress after the extended run: %+v (%v), want the last row at env step 20 + 30", rows, err)
	}
}

// TestTensorBoardFlag: --tensorboard=false writes no event file; a resume
// (where --tensorboard may be given) writes one holding only its own steps.
func TestTensorBoardFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run := []string{"--algo", "sac", "--preset", "quick", "--steps", "20", "--warmup", "20", "--hidden", "8,8",
		"--batch", "8", "--updates-per-step", "1", "--eval-every", "20", "--eval-episodes", "1", "--checkpoint-every", "20",
		"--out", dir, "--tensorboard=false"}
	if _, err := captureStdout(t, func() error { return trainOnline(run) }); err != nil {
		t.Fatal(err)
	}
	if files, _ := tbevent.Files(dir); len(files) != 0 {
		t.Fatalf("--tensorboard=false wrote %v", files)
	}
	if _, err := captureStdout(t, func() error { return trainOnline([]string{"--resume", dir, "--steps", "40", "--tensorboard"}) }); err != nil {
		t.Fatal(err)
	}
	files, _ := tbevent.Files(dir)
	if len(files) != 1 {
		t.Fatalf("event files after the resume: %v", files)
	}
	evs, err := tbevent.ReadFile(files[0])
	if err != nil || len(evs) != 2 || evs[1].Step != 60 {
		t.Fatalf("events %+v (%v), want file_version and env step 60 (the resume's one evaluation)", evs, err)
	}
}
