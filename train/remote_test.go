package train

import (
	"context"
	"fmt"
	"github.com/admpo/admpo/rundir"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/internal/pyserver"
)

// goServer serves factory's envs on a Unix socket at path until the test
// ends; it returns the address and the listener.
func goServer(t *testing.T, path string, factory func() (remote.Env, error)) (string, net.Listener) {
	t.Helper()
	addr := "unix://" + path
	l, err := remote.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- remote.Serve(l, factory) }()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return addr, l
}

// TestRemoteHopperMatchesInProcess trains SAC on the built-in hopper served
// by the Go server and in process with the same config and seed: buffers,
// weights and counters must be identical (the model-based algorithms
// differ by design: a remote env's roll-outs use a learned termination
// rule).
func TestRemoteHopperMatchesInProcess(t *testing.T) {
	cfg := tinyConfig("sac")
	want := straightRun(t, cfg)
	addr, _ := goServer(t, filepath.Join(t.TempDir(), "hopper.sock"), remote.Builtin("hopper"))
	cfg.Env = addr
	got := straightRun(t, cfg)
	if got.obs == nil { // the last step ended an episode: the remote run starts the next one lazily
		got.obs = want.obs
	}
	sameRun(t, got, want)
}

// dying is an env whose server goes away at the server's die-th step
// (counted over all its connections): the step's answer is never sent.
type dying struct {
	remote.Env
	n    *int
	die  int
	mu   *sync.Mutex
	l    net.Listener
	hold chan struct{} // closed when the test ends
}

func (d dying) Step(a []float64) ([]float64, float64, bool, bool, error) {
	d.mu.Lock()
	*d.n++
	n := *d.n
	d.mu.Unlock()
	if n == d.die {
		// Serve closes the connections once its listener is closed; the
		// answer waits until the test ends, so it never goes out before.
		d.l.Close()
		<-d.hold
	}
	return d.Env.Step(a)
}

// TestRemoteServerDiesThenResume kills the server mid-episode in training
// (step 250) or in the evaluation at step 300: the run writes its
// checkpoint and fails with a message naming the address; once a server is
// back at the address, --resume finishes the run, redoing the cut
// evaluation.
func TestRemoteServerDiesThenResume(t *testing.T) {
	for _, c := range []struct {
		name    string
		die, at int
	}{{"training", 250, 249}, {"evaluation", 305, 300}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyConfig("admpo")
			sock := filepath.Join(t.TempDir(), "env.sock")
			var (
				mu sync.Mutex
				n  int
				l  net.Listener
			)
			base := remote.Builtin("hopper")
			hold := make(chan struct{})
			addr, l := goServer(t, sock, func() (remote.Env, error) {
				e, err := base()
				return dying{Env: e, n: &n, die: c.die, mu: &mu, l: l, hold: hold}, err
			})
			t.Cleanup(func() { close(hold) }) // before goServer's cleanup, which waits for the held step
			cfg.Env = addr
			dir := filepath.Join(t.TempDir(), "run")
			o, err := NewOnline(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			err = o.Run(context.Background())
			o.Close()
			if err == nil || !strings.Contains(err.Error(), "environment server "+addr+" failed at env step") ||
				!strings.Contains(err.Error(), "--resume "+dir) {
				t.Fatalf("got %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "policy.onnx")); err == nil {
				t.Fatal("a failed run exported its final policy")
			}
			if _, err := ResumeOnline(dir); err == nil || !strings.Contains(err.Error(), addr) {
				t.Fatalf("resume while the server is down: %v", err)
			}
			goServer(t, sock, remote.Builtin("hopper")) // back at the same address
			r := resumed(t, ResumeOnline, dir)
			if r.Step() != c.at {
				t.Fatalf("resumed at step %d, want %d", r.Step(), c.at)
			}
			if c.at == 249 && !r.real.At(r.real.Len()-1).Timeout && !r.real.At(r.real.Len()-1).Terminal {
				t.Fatal("the episode cut by the resume does not end in the buffer")
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].Step != 300 || rows[1].Step != 600 {
				t.Fatalf("progress rows: %+v", rows)
			}
			if _, err := os.Stat(filepath.Join(dir, "policy.onnx")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRemoteDownAtStart: no server, a clear error naming the address and
// no run directory.
func TestRemoteDownAtStart(t *testing.T) {
	cfg := tinyConfig("admpo")
	cfg.Env = "unix://" + filepath.Join(t.TempDir(), "nobody.sock")
	dir := filepath.Join(t.TempDir(), "run")
	_, err := NewOnline(cfg, dir)
	if err == nil || !strings.Contains(err.Error(), "no environment server at "+cfg.Env) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("run directory left behind: %v", err)
	}
}

// TestRemotePythonADMPO trains ADMPO-ON end to end on a pure-Python
// environment served by python3 -m admpo_env: model rounds with the
// learned termination rule, evaluations, checkpoints, the final files, and
// config.json recording the address and the server's spec.
func TestRemotePythonADMPO(t *testing.T) {
	s := pyserver.Start(t, "admpo_env.examples:PointMass", nil)
	cfg, err := Preset("quick", s.Addr, "admpo", 1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TargetEntropy != -1 {
		t.Fatalf("remote preset target entropy %v, want -1 per action value", cfg.TargetEntropy)
	}
	tc := tinyConfig("admpo")
	tc.Env, tc.TargetEntropy = s.Addr, cfg.TargetEntropy
	tc.Remote = &RemoteEnv{TimeoutS: 20}
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOnline(tc, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var notes []string
	o.OnStatus(func(st Status) {
		if strings.Contains(st.Message, "model fit") {
			notes = append(notes, st.Message)
		}
	})
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), "termination") {
		t.Fatalf("model rounds: %q", notes)
	}
	t.Log(strings.Join(notes, "\n"))
	for _, f := range []string{"policy.onnx", "adm.onnx", "checkpoint.ckpt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	run, err := OpenRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := run.Online.Remote
	if run.Online.Env != s.Addr || r == nil || r.ObsDim != 2 || r.ActDim != 1 || r.MaxEpisodeSteps != 200 || r.TimeoutS != 20 ||
		r.ActionLow[0] != -1 || r.ActionHigh[0] != 1 {
		t.Fatalf("config records env %q, remote %+v", run.Online.Env, r)
	}
	b, _, err := ExportBundle(dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Task != s.Addr || b.Manifest.ActLow[0] != -1 {
		t.Fatalf("bundle manifest: %+v", b.Manifest)
	}
}

// TestRemoteResumeIsDeterministic resumes one checkpoint of a run on the
// Go-served hopper twice: the remote env re-seeded on resume, both
// continuations must be identical.
func TestRemoteResumeIsDeterministic(t *testing.T) {
	cfg := tinyConfig("admpo")
	addr, _ := goServer(t, filepath.Join(t.TempDir(), "hopper.sock"), remote.Builtin("hopper"))
	cfg.Env = addr
	dir := filepath.Join(t.TempDir(), "a")
	killed(t, NewOnline, cfg, dir, 450) // checkpoint at 300
	copyDir := filepath.Join(t.TempDir(), "b")
	if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	var states []runState
	for _, d := range []string{dir, copyDir} {
		r := resumed(t, ResumeOnline, d)
		if r.Step() != 300 {
			t.Fatalf("resumed at %d", r.Step())
		}
		if err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		states = append(states, capture(r))
	}
	sameRun(t, states[1], states[0])
}

// calm is a remote.Env that never terminates: obs (x, v), v += 0.1 a.
type calm struct{ x, v float64 }

func (c *calm) Spec() remote.Spec {
	return remote.Spec{Name: "calm", ObsDim: 2, ActDim: 1, Low: []float64{-1}, High: []float64{1}, MaxEpisodeSteps: 100}
}
func (c *calm) Reset(seed *int64) ([]float64, error) { c.x, c.v = 0, 0; return []float64{0, 0}, nil }
func (c *calm) Step(a []float64) ([]float64, float64, bool, bool, error) {
	c.v += 0.1 * a[0]
	c.x += c.v
	return []float64{c.x, c.v}, -c.x * c.x, false, false, nil
}
func (c *calm) Close() error { return nil }

// TestRemoteNoTerminationsSeen: with no termination in the real data, the
// learned rule never ends a roll-out: every one runs its full length.
func TestRemoteNoTerminationsSeen(t *testing.T) {
	addr, _ := goServer(t, filepath.Join(t.TempDir(), "calm.sock"), func() (remote.Env, error) { return &calm{}, nil })
	cfg := tinyConfig("admpo")
	cfg.Env, cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = addr, 200, 200, 200
	cfg.Rollout = Schedule{0, 200, 3, 3}
	o, err := NewOnline(cfg, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var msgs []string
	o.OnStatus(func(st Status) {
		if strings.Contains(st.Message, "model fit") {
			msgs = append(msgs, st.Message)
		}
	})
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("roll-out %d x H=3 -> %d transitions", cfg.RolloutBatch, 3*cfg.RolloutBatch)
	if len(msgs) != 1 || !strings.Contains(msgs[0], want) || !strings.Contains(msgs[0], "no terminations seen: roll-outs never terminate") {
		t.Fatalf("model rounds %q, want one with %q", msgs, want)
	}
}

// TestRemoteTerminationChoice: a remote environment's roll-outs use the
// learned rule by default (Termination "" or "learned"), none when asked,
// and never the task's rule (it has none); a config naming both a remote
// environment and a task file is refused.
func TestRemoteTerminationChoice(t *testing.T) {
	addr, _ := goServer(t, filepath.Join(t.TempDir(), "hopper.sock"), remote.Builtin("hopper"))
	for term, want := range map[string]string{"": "learned", "learned": "learned", "none": "none", "task": "task"} {
		c := OnlineConfig{Env: addr, Termination: term}
		if got := c.RolloutTermination(); got != want {
			t.Errorf("termination %q: %q, want %q", term, got, want)
		}
	}
	cfg := tinyConfig("admpo")
	cfg.Env, cfg.Termination = addr, "task"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "use learned or none") {
		t.Fatalf("termination task for a remote env: %v", err)
	}
	cfg.Termination, cfg.EnvFile = "", "/abs/robot.yaml"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Fatalf("a remote env and a task file: %v", err)
	}
	cfg.EnvFile, cfg.Termination = "", "none"
	o, err := newOnline(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.obs = envs.Float32(o.env.Reset(0))
	o.Cfg.WarmUp = 1 << 30 // random actions: the hopper falls often
	for o.step < 300 {
		if err := o.envStep(); err != nil {
			t.Fatal(err)
		}
	}
	fallen := []float32{0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if o.task.Done(fallen) {
		t.Error("none: a fallen hopper terminates a roll-out")
	}
	o.Cfg.Termination = ""
	if _, err := o.learnTermination(); err != nil {
		t.Fatal(err)
	}
	if !o.task.Done(fallen) {
		t.Error("learned from a buffer of falls: a fallen hopper does not terminate")
	}
}

// resetDying is an env whose server goes away at the first step after its
// server's resets-th reset (counted over all its connections): that step's
// answer is never sent.
type resetDying struct {
	remote.Env
	resets *int
	after  int
	mu     *sync.Mutex
	l      net.Listener
	hold   chan struct{} // closed when the test ends
}

func (d resetDying) Reset(seed *int64) ([]float64, error) {
	d.mu.Lock()
	*d.resets++
	d.mu.Unlock()
	return d.Env.Reset(seed)
}

func (d resetDying) Step(a []float64) ([]float64, float64, bool, bool, error) {
	d.mu.Lock()
	die := *d.resets == d.after
	d.mu.Unlock()
	if die {
		d.l.Close()
		<-d.hold
	}
	return d.Env.Step(a)
}

// TestOfflineEvalServerDies: an offline run evaluating in a remote
// environment whose server goes away during the second evaluation (after
// the checkpoint at update 100) fails with a message naming the server, the
// update and --resume; resumed once a server is back, it ends with the
// evaluation returns of the same run evaluated in the built-in task (the
// same episodes, the redone updates the same).
func TestOfflineEvalServerDies(t *testing.T) {
	data := Fixtures.RandomHopperFile(t, 600)
	cfg := Fixtures.TinyOfflineConfig(t, "bc", "medium-replay", data)
	want, _ := offStraightRun(t, cfg)
	wantLog, err := ReadOfflineLog(filepath.Join(want, rundir.OfflineLogFile))
	if err != nil {
		t.Fatal(err)
	}

	sock := filepath.Join(t.TempDir(), "env.sock")
	var (
		mu     sync.Mutex
		resets int
		l      net.Listener
	)
	hold := make(chan struct{})
	base := remote.Builtin("hopper")
	addr, l := goServer(t, sock, func() (remote.Env, error) {
		e, err := base()
		return resetDying{Env: e, resets: &resets, after: 2 * cfg.EvalEpisodes, mu: &mu, l: l, hold: hold}, err
	})
	t.Cleanup(func() { close(hold) }) // before goServer's cleanup, which waits for the held step
	cfg.Env, cfg.Termination = addr, "none"
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cfg.Remote == nil || o.Cfg.Remote.ObsDim != 11 || o.Cfg.Remote.ActDim != 3 {
		t.Fatalf("remote record %+v", o.Cfg.Remote)
	}
	err = o.Run(context.Background())
	o.Close()
	if err == nil || !strings.Contains(err.Error(), "environment server "+addr+" failed in the evaluation at update 200") ||
		!strings.Contains(err.Error(), "--resume "+dir) {
		t.Fatalf("got %v", err)
	}
	goServer(t, sock, remote.Builtin("hopper")) // back at the same address
	r := resumed(t, ResumeOffline, dir)
	if r.Step() != 100 {
		t.Fatalf("resumed at update %d, want 100", r.Step())
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	gotLog, err := ReadOfflineLog(filepath.Join(dir, rundir.OfflineLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(gotLog) != len(wantLog) || len(gotLog) != 3 {
		t.Fatalf("offline.csv: %d rows, the built-in run's %d", len(gotLog), len(wantLog))
	}
	for i := range gotLog {
		if gotLog[i].Step != wantLog[i].Step || gotLog[i].ReturnMean != wantLog[i].ReturnMean || !math.IsNaN(gotLog[i].ScoreMean) {
			t.Errorf("row %d: update %d return %v score %v; built-in: update %d return %v", i, gotLog[i].Step, gotLog[i].ReturnMean,
				gotLog[i].ScoreMean, wantLog[i].Step, wantLog[i].ReturnMean)
		}
	}
}
