package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// planOf parses and expands a grid for a base command, checking it as
// admpo sweep does.
func planOf(base, grid, out string) (*sweepPlan, error) {
	keys, err := parseGrid([]string{grid})
	if err != nil {
		return nil, err
	}
	p, err := expandGrid(strings.Fields(base), keys, out)
	if err != nil {
		return nil, err
	}
	return p, checkPlan(p)
}

// TestGridExpansion: the cartesian product in nested-loop order (first key
// slowest), with names and argument lists written out by hand.
func TestGridExpansion(t *testing.T) {
	p, err := planOf("train online --env hopper --preset cpu", "seed=0,1,2 algo=admpo,mbpo", "sw")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"0", "admpo"}, {"0", "mbpo"}, {"1", "admpo"}, {"1", "mbpo"}, {"2", "admpo"}, {"2", "mbpo"}}
	if len(p.Points) != len(want) || !slices.Equal(p.Keys, []string{"seed", "algo"}) {
		t.Fatalf("%d points, keys %v: want 6 points over seed, algo", len(p.Points), p.Keys)
	}
	for i, w := range want {
		pt := p.Points[i]
		name := "seed=" + w[0] + "_algo=" + w[1]
		args := []string{"train", "online", "--env", "hopper", "--preset", "cpu", "--seed=" + w[0], "--algo=" + w[1], "--out", "sw/" + name}
		if pt.Index != i || pt.Name != name || pt.Dir != "sw/"+name || !slices.Equal(pt.Values, w[:]) || !slices.Equal(pt.Args, args) {
			t.Errorf("point %d = %+v, want %s with args %v", i, pt, name, args)
		}
	}
	// Three keys: the last varies fastest; | separates values holding commas.
	p, err = planOf("train online", "hidden=256,256|64,64 seed=0,1 real-ratio=0.05,0.5,1", "o")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pt := range p.Points {
		got = append(got, strings.Join(pt.Values, " "))
	}
	var exp []string
	for _, h := range []string{"256,256", "64,64"} {
		for _, s := range []string{"0", "1"} {
			for _, r := range []string{"0.05", "0.5", "1"} {
				exp = append(exp, h+" "+s+" "+r)
			}
		}
	}
	if !slices.Equal(got, exp) {
		t.Errorf("order %v, want %v", got, exp)
	}
	if p.Points[3].Name != "hidden=256-256_seed=1_real-ratio=0.05" || !slices.Contains(p.Points[3].Args, "--hidden=256,256") {
		t.Errorf("point 3: %+v", p.Points[3])
	}
}

// TestRunDirectoryNames: path values give their file name, unsafe
// characters become '-', and two points with one name are refused.
func TestRunDirectoryNames(t *testing.T) {
	for v, want := range map[string]string{"0": "0", "1e-3": "1e-3", "data/hopper-medium-v2.hdf5": "hopper-medium-v2",
		"/abs/minari/hopper-expert-v0": "hopper-expert-v0", "a b:c": "a-b-c", "0.5": "0.5", "..": "x", "x/../": "x", "-4": "4"} {
		if got := nameValue(v); got != want {
			t.Errorf("nameValue(%q) = %q, want %q", v, got, want)
		}
	}
	p, err := planOf("train offline --algo bc", "dataset=d/hopper-medium.hdf5,d/walker2d-medium.hdf5 seed=3", "runs/off")
	if err != nil {
		t.Fatal(err)
	}
	if p.Points[1].Dir != "runs/off/dataset=walker2d-medium_seed=3" || !slices.Contains(p.Points[1].Args, "--dataset=d/walker2d-medium.hdf5") {
		t.Errorf("point 1: %+v", p.Points[1])
	}
	if _, err := planOf("train offline", "dataset=a/x.hdf5,b/x.hdf5", "o"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "dataset=x") {
		t.Errorf("two data sets named x: %v, want a usage error naming the directory", err)
	}
}

// TestBadGrids: each is a usage error (exit 2) naming the problem.
func TestBadGrids(t *testing.T) {
	for _, c := range []struct{ cmd, grid, want string }{
		{"train online", "sede=0,1", `"sede" is no flag of ` + "`admpo train online`"},
		{"train offline", "steps=5", `"steps" is no flag of ` + "`admpo train offline`"}, // an online-only flag
		{"train online", "seed=", "empty value"},
		{"train online", "seed=0,,1", "empty value"},
		{"train online", "seed=0,1 algo=sac seed=2", `"seed" given twice`},
		{"train online", "seed=0,0", `"0" twice`},
		{"train online", "seed", "want KEY=VALUE"},
		{"train online", "=1", "want KEY=VALUE"},
		{"train online", "", "names no key"},
		{"train online", "out=a,b", "cannot vary"},
		{"train online", "resume=a", "cannot vary"},
		{"train online", "seed=x", "--seed"},
		{"train online", "steps=0,10", "--steps 0"},
		{"train online", "real-ratio=0.5,2", "--real-ratio 2"},
		{"train online --seed 1", "seed=0", "also given in --cmd"},
		{"train online --out x", "seed=0", "--cmd gives --out"},
		{"train online --bogus 1", "seed=0", "--cmd: train online: unknown flag: --bogus"},
		{"eval --bundle b", "seed=0", "train online` or `train offline"},
		{"train sideways", "seed=0", "train sideways"},
		{"", "seed=0", "train online` or `train offline"},
	} {
		_, err := planOf(c.cmd, c.grid, "o")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--cmd %q --grid %q: %v, want a usage error containing %q", c.cmd, c.grid, err, c.want)
		}
	}
	// Through the command: exit 2, and nothing written.
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--grid", "sede=0", "--out", dir + "/a"},
		{"--grid", "seed=0", "--out", dir + "/a", "--k8s", dir + "/j.yaml"},                                 // no --image, --pvc
		{"--grid", "seed=0", "--out", "/elsewhere", "--k8s", dir + "/j.yaml", "--image", "i", "--pvc", "p"}, // not under /runs
		{"--grid", "seed=0", "--out", dir + "/a", "--slurm", dir + "/s.sh", "--k8s", dir + "/j.yaml"},
		{"--grid", "seed=0", "--out", dir + "/a", "--image", "i"},     // --image without --k8s
		{"--grid", "seed=0", "--out", dir + "/a", "--run-index", "1"}, // --run-index without --plan
		{"--grid", "seed=0", "--out", dir + "/a", "--slurm", dir + "/s.sh", "--name", "Bad_Name"},
		{"--grid", "seed=0", "--out", dir + "/a b", "--slurm", dir + "/s.sh"}, // no spaces in #SBATCH paths
		{"--plan", dir + "/none.json", "--run-index", "0"},
		{"--plan", dir + "/none.json", "--jobs", "3"},
	} {
		err := runSweep(args)
		if exitCode(err) != 2 {
			t.Errorf("admpo sweep %s: %v, want exit 2", strings.Join(args, " "), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("bad sweeps wrote %v", ents)
	}
}

// TestResumeOrFresh: the rule of scripts/online_results.sh.
func TestResumeOrFresh(t *testing.T) {
	dir := t.TempDir()
	p := &sweepPlan{Command: []string{"train", "offline"}}
	pt := sweepPoint{Dir: filepath.Join(dir, "run"), Args: []string{"train", "offline", "--seed=1", "--out", "x"}}
	check := func(stage string, want runAction, wantArgs []string) {
		t.Helper()
		args, a := pointArgs(p, pt)
		if a != want || !slices.Equal(args, wantArgs) {
			t.Errorf("%s: %v %v, want %v %v", stage, a, args, want, wantArgs)
		}
	}
	check("no directory", actFresh, pt.Args)
	os.MkdirAll(pt.Dir, 0o755)
	os.WriteFile(filepath.Join(pt.Dir, "config.json"), []byte("{}"), 0o644)
	check("config.json only (killed before its first checkpoint)", actFresh, pt.Args)
	os.Mkdir(filepath.Join(pt.Dir, "checkpoint.ckpt"), 0o755) // a directory is no checkpoint
	check("a directory named checkpoint.ckpt", actFresh, pt.Args)
	os.Remove(filepath.Join(pt.Dir, "checkpoint.ckpt"))
	os.WriteFile(filepath.Join(pt.Dir, "checkpoint.ckpt"), []byte("c"), 0o644)
	check("checkpoint", actResume, []string{"train", "offline", "--resume", pt.Dir})
	os.WriteFile(filepath.Join(pt.Dir, "policy.onnx"), []byte("p"), 0o644)
	check("final policy", actDone, nil)
}

// TestRunIndexFromEnv: --run-index, else JOB_COMPLETION_INDEX, else
// SLURM_ARRAY_TASK_ID.
func TestRunIndexFromEnv(t *testing.T) {
	t.Setenv("SLURM_ARRAY_TASK_ID", "4")
	os.Unsetenv("JOB_COMPLETION_INDEX")
	if i, err := runIndexFrom(false, -1); i != 4 || err != nil {
		t.Errorf("slurm: %d %v", i, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	if i, err := runIndexFrom(false, -1); i != 2 || err != nil {
		t.Errorf("k8s: %d %v", i, err)
	}
	if i, err := runIndexFrom(true, 7); i != 7 || err != nil {
		t.Errorf("flag: %d %v", i, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "x")
	if _, err := runIndexFrom(false, -1); !errors.Is(err, errUsage) {
		t.Errorf("bad env: %v", err)
	}
	os.Unsetenv("JOB_COMPLETION_INDEX")
	os.Unsetenv("SLURM_ARRAY_TASK_ID")
	if _, err := runIndexFrom(false, -1); !errors.Is(err, errUsage) {
		t.Errorf("no index: %v", err)
	}
	p := &sweepPlan{Command: []string{"train", "online"}, Points: []sweepPoint{{Dir: "x"}}}
	if err := runPoint(p, 1); !errors.Is(err, errUsage) {
		t.Errorf("index past the plan: %v", err)
	}
}

// TestPlanFileGrowsButNeverChanges: a second sweep into the same OUT may
// add points; a point whose arguments changed is refused.
func TestPlanFileGrowsButNeverChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, planName)
	p1, _ := planOf("train online", "seed=0,1", dir)
	if err := writePlan(path, p1); err != nil {
		t.Fatal(err)
	}
	back, err := readPlan(path)
	if err != nil || !reflect.DeepEqual(back, p1) {
		t.Fatalf("read back %+v, %v", back, err)
	}
	p2, _ := planOf("train online", "seed=0,1,2", dir)
	if err := writePlan(path, p2); err != nil {
		t.Fatalf("growing the grid: %v", err)
	}
	p3, _ := planOf("train online --steps 10", "seed=0,1,2", dir)
	if err := writePlan(path, p3); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "other arguments") {
		t.Fatalf("changed arguments: %v", err)
	}
	os.WriteFile(path, []byte(`{"version": 1, "bogus": 2}`), 0o644)
	if _, err := readPlan(path); !errors.Is(err, errUsage) {
		t.Errorf("bad plan: %v", err)
	}
}

// TestLocalRunner runs a plan with a fake launcher: finished runs are
// skipped, checkpointed ones resumed with their log appended, a run held by
// another process's lock left alone, at most --jobs at a time, and a run that ends
// without its policy reported.
func TestLocalRunner(t *testing.T) {
	dir := t.TempDir()
	p, err := planOf("train online", "seed=0,1,2,3,4,5", dir)
	if err != nil {
		t.Fatal(err)
	}
	put := func(i int, name, content string) {
		os.MkdirAll(p.Points[i].Dir, 0o755)
		os.WriteFile(filepath.Join(p.Points[i].Dir, name), []byte(content), 0o644)
	}
	put(1, "policy.onnx", "done") // finished
	put(2, "checkpoint.ckpt", "c")
	os.WriteFile(p.Points[2].Dir+".log", []byte("first part\n"), 0o644)
	os.WriteFile(p.Points[5].Dir+".log", []byte("stale\n"), 0o644)
	held, err := lockRun(p.Points[3].Dir + ".lock") // held by another open file: another process's lock
	if err != nil || held == nil {
		t.Fatalf("lockRun: %v %v", held, err)
	}
	defer held.Close()
	os.WriteFile(p.Points[0].Dir+".lock", []byte("999999999\n"), 0o644) // left by a dead process: not a lock

	var mu sync.Mutex
	var launched []int
	var running, most atomic.Int32
	launch := func(ctx context.Context, i int, log io.Writer) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		launched = append(launched, i)
		mu.Unlock()
		if b, err := os.ReadFile(p.Points[i].Dir + ".lock"); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
			t.Errorf("point %d runs without its lock: %q %v", i, b, err)
		}
		fmt.Fprintf(log, "run %d: step 10: eval return %d.5\n", i, i)
		time.Sleep(150 * time.Millisecond)
		if i == 4 {
			return errors.New("exit status 1") // dies without a policy
		}
		os.MkdirAll(p.Points[i].Dir, 0o755)
		return os.WriteFile(filepath.Join(p.Points[i].Dir, "policy.onnx"), []byte("p"), 0o644)
	}
	var out bytes.Buffer
	r := &localRunner{plan: p, jobs: 2, w: &out, launch: launch}
	err = r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1 of 6 runs did not finish") {
		t.Errorf("run: %v, want one unfinished run", err)
	}
	slices.Sort(launched)
	if !slices.Equal(launched, []int{0, 2, 4, 5}) {
		t.Errorf("launched %v, want 0 2 4 5", launched)
	}
	if m := most.Load(); m != 2 {
		t.Errorf("at most %d runs at a time, want 2 (--jobs 2)", m)
	}
	if b, _ := os.ReadFile(p.Points[2].Dir + ".log"); string(b) != "first part\nrun 2: step 10: eval return 2.5\n" {
		t.Errorf("resumed run's log %q: want the old part kept", b)
	}
	if b, _ := os.ReadFile(p.Points[5].Dir + ".log"); string(b) != "run 5: step 10: eval return 5.5\n" {
		t.Errorf("fresh run's log %q: want it started anew", b)
	}
	for i, want := range []bool{false, false, false, true, false, false} {
		if _, err := os.Stat(p.Points[i].Dir + ".lock"); (err == nil) != want {
			t.Errorf("point %d: lock file present %v, want %v", i, err == nil, want)
		}
	}
	log := out.String()
	for _, want := range []string{"sweep: 6 runs in " + dir + ", 2 at a time", "skipped seed=1: finished already",
		"skipped seed=3: another sweep runs it", "resumed seed=2", "started seed=0", "started seed=5",
		"finished seed=5 in 0s: run 5: step 10: eval return 5.5", "stopped (exit status 1) seed=4",
		"sweep: 3 finished, 2 skipped, 1 stopped or failed, 0 not started"} {
		if !strings.Contains(log, want) {
			t.Errorf("progress lacks %q:\n%s", want, log)
		}
	}
	if strings.Count(log, "[6/6]") != 1 {
		t.Errorf("progress does not count to 6/6:\n%s", log)
	}

	// A cancelled context (Ctrl-C) starts nothing more and says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = &localRunner{plan: p, jobs: 1, w: io.Discard, launch: func(context.Context, int, io.Writer) error {
		t.Error("launched after the interrupt")
		return nil
	}}
	if err := r.run(ctx); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("interrupted sweep: %v", err)
	}
}

// TestRunLockSharedWithScripts: scripts/run_lock.sh and admpo sweep take
// the same lock; twenty scripts started at once take it once; a lock goes
// with its holder's process.
func TestRunLockSharedWithScripts(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	lib, err := filepath.Abs("../../scripts/run_lock.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "runs", "hopper-admpo-0")
	// script starts bash that takes the lock, prints "took" or "busy", then
	// holds it until its stdin closes and releases it (or not, if release is
	// false: a process that dies holding it).
	script := func(release bool) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
		body := `source "$1"; if run_lock "$2"; then echo took; read -r _; ` + map[bool]string{true: `run_unlock "$2"; `, false: ``}[release] + `else echo busy; fi`
		cmd := exec.Command("bash", "-c", body, "bash", lib, dir)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, in, bufio.NewReader(out)
	}
	said := func(r *bufio.Reader) string { line, _ := r.ReadString('\n'); return strings.TrimSpace(line) }

	held, err := lockRun(dir + ".lock")
	if err != nil || held == nil {
		t.Fatalf("sweep's lock: %v %v", held, err)
	}
	cmd, in, out := script(true)
	if got := said(out); got != "busy" {
		t.Errorf("script beside a sweep's lock: %q, want busy", got)
	}
	in.Close()
	cmd.Wait()
	unlockRun(held)

	cmd, in, out = script(true)
	if got := said(out); got != "took" {
		t.Fatalf("script after the sweep released it: %q, want took", got)
	}
	if b, _ := os.ReadFile(dir + ".lock"); strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("lock file holds %q, want the script's pid %d", b, cmd.Process.Pid)
	}
	if f, err := lockRun(dir + ".lock"); f != nil || err != nil {
		t.Errorf("sweep took a lock the script holds: %v %v", f, err)
	}
	in.Close()
	cmd.Wait()
	if _, err := os.Stat(dir + ".lock"); err == nil {
		t.Error("the script left its lock file")
	}

	// Twenty at once: one takes it.
	var cmds []*exec.Cmd
	var ins []io.WriteCloser
	took := 0
	for i := 0; i < 20; i++ {
		c, w, r := script(true)
		cmds, ins = append(cmds, c), append(ins, w)
		defer c.Wait()
		defer w.Close()
		if said(r) == "took" {
			took++
		}
	}
	if took != 1 {
		t.Errorf("%d of 20 scripts started together took the lock, want 1", took)
	}
	for i := range cmds {
		ins[i].Close()
		cmds[i].Wait()
	}

	// Scripts and sweeps taking and releasing it as fast as they can: never
	// two holders at once (a holder that releases removes the file, and one
	// that locked the removed file must notice it and retry).
	churn := filepath.Join(filepath.Dir(dir), "churn")
	inside := churn + ".in"
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			body := `source "$1"; for j in $(seq 30); do if run_lock "$2"; then mkdir "$3" 2>/dev/null || echo overlap; rmdir "$3" 2>/dev/null; run_unlock "$2"; fi; done`
			out, err := exec.Command("bash", "-c", body, "bash", lib, churn, inside).CombinedOutput()
			if err != nil {
				t.Errorf("churning script: %v %s", err, out)
			}
			overlaps.Add(int32(strings.Count(string(out), "overlap")))
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 5000; j++ {
				f, err := lockRun(churn + ".lock")
				if err != nil {
					t.Error(err)
					return
				}
				if f == nil {
					continue
				}
				if os.Mkdir(inside, 0o755) != nil {
					overlaps.Add(1)
				}
				os.Remove(inside)
				unlockRun(f)
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two holders of one lock", n)
	}

	// A holder that dies leaves its file but no lock.
	cmd, in, out = script(false)
	if got := said(out); got != "took" {
		t.Fatalf("script: %q, want took", got)
	}
	in.Close()
	cmd.Wait()
	f, err := lockRun(dir + ".lock")
	if err != nil || f == nil {
		t.Fatalf("lock of a dead holder not taken: %v %v", f, err)
	}
	unlockRun(f)
}

// sbatchLines are the #SBATCH options of a script, checking that they all
// precede its first command (sbatch reads no further).
func sbatchLines(t *testing.T, script string) map[string]string {
	t.Helper()
	opts := map[string]string{}
	commands := false
	sc := bufio.NewScanner(strings.NewReader(script))
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case n == 0:
			if line != "#!/bin/bash" {
				t.Errorf("first line %q", line)
			}
		case strings.HasPrefix(line, "#SBATCH "):
			if commands {
				t.Errorf("%q after the first command: sbatch ignores it", line)
			}
			k, v, _ := strings.Cut(strings.TrimPrefix(line, "#SBATCH "), "=")
			opts[k] = v
		case strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#"):
			commands = true
		}
	}
	return opts
}

// TestSlurmScript: bash -n accepts it, its #SBATCH lines hold the array
// and options, and run with an array index it executes the binary with the
// plan and that index, however odd the paths.
func TestSlurmScript(t *testing.T) {
	dir := t.TempDir()
	p, err := planOf("train online --env hopper", "seed=0,1,2 algo=admpo,mbpo", filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(dir, "it's a dir") // the binary's path is quoted for bash
	os.MkdirAll(odd, 0o755)
	fake := filepath.Join(odd, "fake admpo")
	got := filepath.Join(odd, "args.txt")
	os.WriteFile(fake, []byte("#!/bin/bash\nprintf '%s\\n' \"$@\" > \""+got+"\"\necho \"$OPENBLAS_NUM_THREADS\" >> \""+got+"\"\n"), 0o755)
	plan := filepath.Join(dir, "out", planName)
	script := slurmScript(p, slurmOptions{Name: "hop", Plan: plan, Bin: fake, Script: "s.sh", Dir: dir, Parallelism: 2,
		Extra: []string{"--time=08:00:00", "--cpus-per-task=1"}})
	path := filepath.Join(dir, "s.sh")
	os.WriteFile(path, []byte(script), 0o755)
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s\n%s", err, out, script)
	}
	opts := sbatchLines(t, script)
	want := map[string]string{"--job-name": "hop", "--array": "0-5%2", "--output": filepath.Join(dir, "out", "slurm-%A_%a.out"),
		"--open-mode": "append", "--requeue": "", "--time": "08:00:00", "--cpus-per-task": "1", "--chdir": dir}
	if !reflect.DeepEqual(opts, want) {
		t.Errorf("#SBATCH options %v, want %v", opts, want)
	}
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=3")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running the script: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(got)
	if w := "sweep\n--plan\n" + plan + "\n--run-index\n3\n1\n"; string(b) != w {
		t.Errorf("the script ran the binary with %q, want %q", b, w)
	}
	p1, _ := planOf("train online", "seed=0", dir)
	if s := slurmScript(p1, slurmOptions{Name: "a", Plan: "p", Bin: "b"}); sbatchLines(t, s)["--array"] != "0-0" {
		t.Errorf("one point: %s", s)
	}
}

// TestK8sManifest parses the manifest back with yaml.v3 and checks the
// Indexed Job's documented fields, the plan in its ConfigMap, and, where
// Debian's yamllint is installed, that it lints clean.
func TestK8sManifest(t *testing.T) {
	p, err := planOf("train online --env hopper", "seed=0,1,2 algo=admpo,mbpo", "/data/runs/hop")
	if err != nil {
		t.Fatal(err)
	}
	b, err := k8sManifest(p, k8sOptions{Name: "hop", Image: "registry.example/admpo:1", PVC: "shared", MountPath: "/data/runs",
		Bin: "/usr/local/bin/admpo", File: "j.yaml", Parallelism: 4, BackoffLimit: 12})
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("yaml: %v\n%s", err, b)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want a ConfigMap and a Job", len(docs))
	}
	type m = map[string]any
	get := func(v any, path ...any) any {
		t.Helper()
		for _, k := range path {
			switch k := k.(type) {
			case string:
				mm, ok := v.(m)
				if !ok {
					t.Fatalf("no mapping at %v", path)
				}
				v = mm[k]
			case int:
				l, ok := v.([]any)
				if !ok || k >= len(l) {
					t.Fatalf("no list item at %v", path)
				}
				v = l[k]
			}
		}
		return v
	}
	cm, job := docs[0], docs[1]
	if get(cm, "apiVersion") != "v1" || get(cm, "kind") != "ConfigMap" || get(cm, "metadata", "name") != "hop-plan" {
		t.Errorf("ConfigMap header: %v", cm)
	}
	var plan struct {
		Points []struct {
			Index int
			Dir   string
			Args  []string
		}
	}
	if err := json.Unmarshal([]byte(get(cm, "data", "sweep.json").(string)), &plan); err != nil || len(plan.Points) != 6 {
		t.Fatalf("plan in the ConfigMap: %v, %d points", err, len(plan.Points))
	}
	if pt := plan.Points[5]; pt.Index != 5 || pt.Dir != "/data/runs/hop/seed=2_algo=mbpo" ||
		!slices.Equal(pt.Args, []string{"train", "online", "--env", "hopper", "--seed=2", "--algo=mbpo", "--out", "/data/runs/hop/seed=2_algo=mbpo"}) {
		t.Errorf("plan point 5: %+v", pt)
	}
	for path, want := range map[string]any{
		"apiVersion": "batch/v1", "kind": "Job", "metadata.name": "hop",
		"spec.completionMode": "Indexed", "spec.completions": 6, "spec.parallelism": 4, "spec.backoffLimit": 12,
		"spec.template.spec.restartPolicy": "OnFailure",
	} {
		var keys []any
		for _, k := range strings.Split(path, ".") {
			keys = append(keys, k)
		}
		if got := get(job, keys...); got != want {
			t.Errorf("%s = %v (%T), want %v", path, got, got, want)
		}
	}
	ps := []any{"spec", "template", "spec"}
	cs := get(job, append(ps, "containers")...).([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	c := cs[0]
	if get(c, "image") != "registry.example/admpo:1" || get(c, "name") != "admpo" {
		t.Errorf("container %v", c)
	}
	var cmdline []string
	for _, part := range [][]any{get(c, "command").([]any), get(c, "args").([]any)} {
		for _, a := range part {
			cmdline = append(cmdline, a.(string))
		}
	}
	if want := []string{"/usr/local/bin/admpo", "sweep", "--plan", "/etc/admpo-sweep/sweep.json"}; !slices.Equal(cmdline, want) {
		t.Errorf("command and args %v, want %v (the index from $JOB_COMPLETION_INDEX)", cmdline, want)
	}
	mounts := map[string]string{}
	for _, vm := range get(c, "volumeMounts").([]any) {
		mounts[get(vm, "name").(string)] = get(vm, "mountPath").(string)
	}
	if !reflect.DeepEqual(mounts, map[string]string{"runs": "/data/runs", "plan": "/etc/admpo-sweep"}) {
		t.Errorf("volumeMounts %v", mounts)
	}
	vols := map[string]any{}
	for _, v := range get(job, append(ps, "volumes")...).([]any) {
		vols[get(v, "name").(string)] = v
	}
	if get(vols["runs"], "persistentVolumeClaim", "claimName") != "shared" || get(vols["plan"], "configMap", "name") != "hop-plan" {
		t.Errorf("volumes %v", vols)
	}
	// Parallelism 0 (or above N) runs every point at once.
	b0, _ := k8sManifest(p, k8sOptions{Name: "hop", Image: "i", PVC: "c", MountPath: "/data/runs", Bin: "admpo"})
	if !bytes.Contains(b0, []byte("\n  parallelism: 6\n")) {
		t.Errorf("parallelism 0 gives:\n%s", b0)
	}

	lint, err := exec.LookPath("yamllint")
	if err != nil {
		t.Skip("yamllint not installed (Debian package yamllint): lint skipped")
	}
	f := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(f, b, 0o644)
	conf := "{extends: default, rules: {line-length: disable, document-start: disable, indentation: {indent-sequences: consistent}}}"
	if out, err := exec.Command(lint, "-s", "-d", conf, f).CombinedOutput(); err != nil {
		t.Errorf("yamllint: %v\n%s", err, out)
	}
}

// TestDNSName: derived job names are DNS-1123 labels.
func TestDNSName(t *testing.T) {
	for in, want := range map[string]string{"sweep": "sweep", "Hopper_Sweep.2": "hopper-sweep-2", "...": "admpo-sweep",
		strings.Repeat("ab", 40): strings.Repeat("ab", 25)} {
		if got := jobName(in); got != want || !dnsLabel.MatchString(got) {
			t.Errorf("jobName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSweepBinary runs a tiny real grid with the admpo binary: each run's
// config.json holds its grid value and the base command's flags; a second
// sweep skips finished runs and resumes one whose policy is gone; the Slurm
// script and $JOB_COMPLETION_INDEX run one point.
func TestSweepBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds admpo and trains")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sw")
	base := "train online --env inverted-pendulum --algo sac --steps 60 --warmup 40 --eval-every 50 --eval-episodes 1 --checkpoint-every 50 --batch 32"
	r := runBin(t, bin, nil, "sweep", "--grid", "seed=3,4", "--cmd", base, "--out", out, "--jobs", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "sweep: 2 finished, 0 skipped") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, seed := range []int{3, 4} {
		run := filepath.Join(out, fmt.Sprintf("seed=%d", seed))
		var cfg struct {
			Seed          int64  `json:"seed"`
			Batch         int    `json:"batch"`
			Env           string `json:"env"`
			Steps, WarmUp int
		}
		b, err := os.ReadFile(filepath.Join(run, "config.json"))
		if err != nil || json.Unmarshal(b, &cfg) != nil || cfg.Seed != int64(seed) || cfg.Batch != 32 || cfg.Env != "inverted-pendulum" {
			t.Errorf("%s/config.json: %+v %v", run, cfg, err)
		}
		if !fileExists(filepath.Join(run, "policy.onnx")) {
			t.Errorf("%s has no policy.onnx", run)
		}
	}
	// Resume: the final policy of seed 3 removed, its checkpoint kept.
	os.Remove(filepath.Join(out, "seed=3", "policy.onnx"))
	r = runBin(t, bin, nil, "sweep", "--grid", "seed=3,4", "--cmd", base, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "resumed seed=3") || !strings.Contains(r.stdout, "skipped seed=4: finished already") {
		t.Fatalf("second sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "seed=3.log")); !strings.Contains(string(b), "--resume "+filepath.Join(out, "seed=3")) ||
		!strings.Contains(string(b), "config (saved to") {
		t.Errorf("seed=3.log lacks the fresh start and the resume:\n%s", b)
	}
	// The Slurm script runs point 1 (seed 4), removed, afresh.
	script := filepath.Join(dir, "s.sh")
	r = runBin(t, bin, nil, "sweep", "--grid", "seed=3,4", "--cmd", base, "--out", out, "--slurm", script, "--bin", bin)
	if r.code != 0 {
		t.Fatalf("--slurm: exit %d\n%s", r.code, r.stderr)
	}
	os.RemoveAll(filepath.Join(out, "seed=4"))
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1")
	if b, err := cmd.CombinedOutput(); err != nil || !fileExists(filepath.Join(out, "seed=4", "policy.onnx")) {
		t.Fatalf("slurm index 1: %v\n%s", err, b)
	}
	// $JOB_COMPLETION_INDEX selects a point; a finished one is left alone.
	r = runBin(t, bin, []string{"JOB_COMPLETION_INDEX=0"}, "sweep", "--plan", filepath.Join(out, planName))
	if r.code != 0 || !strings.Contains(r.stdout, "sweep point 0 (seed=3): finished already") {
		t.Errorf("JOB_COMPLETION_INDEX=0: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
