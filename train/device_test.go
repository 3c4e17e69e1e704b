package train

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// syncedCapture copies a device learner's state back to the host and
// captures the run.
func syncedCapture(t *testing.T, o *Online) runState {
	t.Helper()
	if (o.dev != nil) != (o.Cfg.Device == "emu") {
		t.Fatalf("device %q: device learner %v", o.Cfg.Device, o.dev != nil)
	}
	if err := o.sac.Sync(); err != nil {
		t.Fatal(err)
	}
	return capture(o)
}

func straightSynced(t *testing.T, cfg OnlineConfig) runState {
	t.Helper()
	a, err := NewOnline(cfg, t.TempDir()+"/straight")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	return syncedCapture(t, a)
}

// maxRelDiff is max|got-want| over max|want|.
func maxRelDiff(got, want []float32) float64 {
	scale, worst := 1e-30, 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i])-float64(want[i])))
	}
	return worst / scale
}

// TestDeviceEmuRunMatchesCPU: a short online SAC run (hopper, 600 env
// steps, 400 updates) with its updates on the emulated device ends where
// the CPU run ends, but for rounding: the learner differs from sac.Agent in
// float32 summation order only (1e-5 per update, sacdev's test), and the
// runs end about 3e-7 apart in the weights, the transitions the acting
// actor chose and log α. The bound, 1e-4, is far below what a wrong run
// moves: a skipped actor copy-back (acting with stale weights), a lost
// update or a different noise draw change them by 1e-2 or more.
func TestDeviceEmuRunMatchesCPU(t *testing.T) {
	cfg := tinyConfig("sac")
	want := straightSynced(t, cfg)
	cfg.Device = "emu"
	got := straightSynced(t, cfg)
	if got.step != want.step || got.updates != want.updates || got.adamT != want.adamT {
		t.Fatalf("counters: emu %+v, cpu %+v", pick(got), pick(want))
	}
	const tol = 1e-4
	for _, x := range []struct {
		what      string
		got, want []float32
	}{{"actor weights", got.actor, want.actor}, {"target critic weights", got.critic, want.critic},
		{"real buffer", got.real, want.real}, {"observation", got.obs, want.obs}} {
		if len(x.got) != len(x.want) {
			t.Fatalf("%s: %d values, cpu %d", x.what, len(x.got), len(x.want))
		}
		if d := maxRelDiff(x.got, x.want); !(d <= tol) {
			t.Errorf("%s: emu and cpu differ by %.3g of the largest value (tolerance %g)", x.what, d, tol)
		}
	}
	if d := math.Abs(got.logAlpha - want.logAlpha); !(d <= tol) {
		t.Errorf("log alpha: emu %.7f, cpu %.7f", got.logAlpha, want.logAlpha)
	}
	t.Logf("actor %.3g, target critic %.3g, real buffer %.3g, log alpha %.3g (emu %.7f, cpu %.7f)",
		maxRelDiff(got.actor, want.actor), maxRelDiff(got.critic, want.critic), maxRelDiff(got.real, want.real),
		math.Abs(got.logAlpha-want.logAlpha), got.logAlpha, want.logAlpha)
}

// TestDeviceEmuResumeMatchesUninterrupted: an emu run killed after its
// step-300 checkpoint and resumed equals the uninterrupted emu run, bit
// for bit (the checkpoint holds the device's weights, targets, log α and
// Adam state, and resuming uploads them).
func TestDeviceEmuResumeMatchesUninterrupted(t *testing.T) {
	cfg := tinyConfig("sac")
	cfg.Device = "emu"
	want := straightSynced(t, cfg)
	c, _ := resumedToEnd(t, NewOnline, ResumeOnline, cfg, 450, 300)
	if c.dev == nil {
		t.Fatal("the resumed run has no device learner")
	}
	sameRun(t, syncedCapture(t, c), want)
}

// agentPair is a CPU sac.Agent and one on the emulated device, built
// alike (same seed: same initial weights).
func agentPair(t *testing.T) (cpu, dev *sac.Agent, dl *devLearner) {
	t.Helper()
	cfg := sac.DefaultConfig(3)
	cfg.Hidden, cfg.BatchSize, cfg.ActorEvery = []int{16, 16}, 32, 2
	low, high := []float64{-1, -2, -0.5}, []float64{1, 1, 1.5}
	var err error
	if cpu, err = sac.New(11, low, high, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cpu.Close() })
	if dev, err = sac.New(11, low, high, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if dl, err = newDevLearner("emu", dev); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dl.Close() })
	return cpu, dev, dl
}

// stateOf is a's sac.State over its host slices.
func stateOf(a *sac.Agent) *sac.State {
	views := func(m *models.MLP) [][]float32 {
		var ps [][]float32
		for i := range m.Layers {
			ps = append(ps, m.Layers[i].W, m.Layers[i].B)
		}
		return ps
	}
	return &sac.State{Actor: views(&a.Actor.Net), Critic1: views(&a.Critic1.Net), Critic2: views(&a.Critic2.Net),
		Target1: views(&a.Target1.Net), Target2: views(&a.Target2.Net), LogAlpha: a.LogAlpha,
		ActorOpt: a.ActorOpt, CriticOpt: a.CriticOpt, AlphaOpt: a.AlphaOpt, Updates: a.Updates}
}

// updateBoth runs n updates of each agent on the same random batches with
// the same noise.
func updateBoth(t *testing.T, n int, seed int64, agents ...*sac.Agent) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	for range n {
		b := buffer.NewBatch(32, 11, 3)
		for _, v := range [][]float32{b.Obs, b.NextObs, b.Rew, b.Act} {
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 0.5)
			}
		}
		b.Terminal[3] = 1
		noise := rng.Int63()
		for _, a := range agents {
			a.SetRand(rand.New(rand.NewSource(noise)))
			if _, err := a.Update(b); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// agentCkpt syncs a and returns its checkpoint sections.
func agentCkpt(t *testing.T, a *sac.Agent) *ckpt.File {
	t.Helper()
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	f := ckpt.New()
	a.Save(f)
	g, err := ckpt.Decode(f.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sameSACSections compares every section of two SAC checkpoints within tol of
// each section's largest value (0: bit for bit).
func sameSACSections(t *testing.T, what string, got, want *ckpt.File, tol float64) {
	t.Helper()
	names := want.Names()
	if len(names) < 20 {
		t.Fatalf("%s: only %d sections", what, len(names))
	}
	for _, name := range names {
		w, err := want.F32(name, -1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.F32(name, len(w))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d := maxRelDiff(g, w); !(d <= tol) {
			t.Errorf("%s: section %s differs by %.3g of its largest value", what, name, d)
		}
	}
}

// TestDeviceCheckpointsInterchange: the device learner's checkpoint (weights,
// targets, log α, every Adam moment and step count) matches the CPU agent's
// after the same updates (Adam's moments in the CPU's tensor order), and a
// checkpoint moves between the CPU and the device exactly: CPU -> emu -> CPU
// round-trips bit for bit, and an emu checkpoint resumed on the CPU goes on
// as the emu agent does.
func TestDeviceCheckpointsInterchange(t *testing.T) {
	cpu, dev, _ := agentPair(t)
	updateBoth(t, 5, 1, cpu, dev)
	sameSACSections(t, "after 5 updates: emu vs cpu", agentCkpt(t, dev), agentCkpt(t, cpu), 1e-4)

	// CPU -> emu -> CPU, exactly: load the CPU's checkpoint onto the device
	// and pull the device's state into a third, fresh agent.
	cpu2, dev2, dl2 := agentPair(t)
	fromCPU := agentCkpt(t, cpu)
	if err := dev2.Load(fromCPU); err != nil {
		t.Fatal(err)
	}
	cpu3, _, _ := agentPair(t)
	st := stateOf(cpu3)
	if err := dl2.Pull(st); err != nil {
		t.Fatal(err)
	}
	cpu3.Updates = st.Updates
	sameSACSections(t, "cpu checkpoint through emu", agentCkpt(t, cpu3), fromCPU, 0)

	// The emu agent's checkpoint resumed on the CPU continues like the emu agent.
	if err := cpu2.Load(agentCkpt(t, dev)); err != nil {
		t.Fatal(err)
	}
	updateBoth(t, 3, 2, cpu2, dev)
	sameSACSections(t, "emu checkpoint resumed on cpu", agentCkpt(t, cpu2), agentCkpt(t, dev), 1e-4)
}

// offSynced runs cfg offline to its end (or, with resume, killed after the
// update-200 checkpoint and resumed) and captures it after copying the
// device's state back.
func offSynced(t *testing.T, cfg OfflineConfig, resume bool) offState {
	t.Helper()
	var o *Offline
	if resume {
		o, _ = resumedToEnd(t, NewOffline, ResumeOffline, cfg, 250, 200)
	} else {
		var err error
		if o, err = NewOffline(cfg, t.TempDir()+"/straight"); err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if err := o.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if wantDev := cfg.Device == "emu" && cfg.Algo != "bc"; (o.dev != nil) != wantDev {
		t.Fatalf("device %q, algo %s: device learner %v, want %v", cfg.Device, cfg.Algo, o.dev != nil, wantDev)
	}
	if wantBC := cfg.Device == "emu" && cfg.Algo == "bc"; (o.bcDev != nil) != wantBC {
		t.Fatalf("device %q, algo %s: device BC trainer %v, want %v", cfg.Device, cfg.Algo, o.bcDev != nil, wantBC)
	}
	if err := o.sac.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := o.syncBC(); err != nil {
		t.Fatal(err)
	}
	return offCapture(o)
}

// TestDeviceEmuOffline: an offline MOPO run (roll-outs of the exported
// actor, the cosine actor learning rate) with its SAC updates and the
// ensemble's fit on emu ends within rounding of the CPU run (see
// TestDeviceEmuRunMatchesCPU for the tolerance), and resumed after a kill
// equals the uninterrupted emu run bit for bit; likewise a BC run with
// device emu (its steps on sacdev.BC; the checkpoint holds the actor and
// Adam state pulled from the device).
func TestDeviceEmuOffline(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	cfg := Fixtures.TinyOfflineConfig(t, "mopo", "medium-replay", data)
	cfg.ActorLRSchedule = "cosine"
	want := offSynced(t, cfg, false)
	cfg.Device = "emu"
	probe, err := NewOffline(cfg, t.TempDir()+"/probe")
	if err != nil {
		t.Fatal(err)
	}
	if ens, ok := probe.dyn.(*dynamics.Ensemble); !ok || ens.FitCfg.Device == nil || ens.FitCfg.Device != probe.dev.d {
		t.Errorf("the ensemble's fit does not run on the learner's device (%T)", probe.dyn)
	}
	probe.Close()
	got := offSynced(t, cfg, false)
	if got.step != want.step || got.updates != want.updates || got.adamT != want.adamT || got.modelN != want.modelN {
		t.Fatalf("counters: emu %+v, cpu %+v", got.counters(), want.counters())
	}
	const tol = 1e-4
	for _, x := range []struct {
		what      string
		got, want []float32
	}{{"actor weights", got.actor, want.actor}, {"target critic weights", got.critic, want.critic},
		{"model buffer", got.model, want.model}} {
		if d := maxRelDiff(x.got, x.want); len(x.got) != len(x.want) || !(d <= tol) {
			t.Errorf("%s: emu and cpu differ by %.3g of the largest value (%d and %d values)", x.what, d, len(x.got), len(x.want))
		}
	}
	offSameRun(t, offSynced(t, cfg, true), got)

	bc := Fixtures.TinyOfflineConfig(t, "bc", "medium-replay", data)
	wantBC := offSynced(t, bc, false)
	bc.Device = "emu"
	gotBC := offSynced(t, bc, false)
	if gotBC.step != wantBC.step || gotBC.updates != wantBC.updates || gotBC.adamT != wantBC.adamT || gotBC.evals != wantBC.evals {
		t.Fatalf("bc counters: emu %+v, cpu %+v", gotBC.counters(), wantBC.counters())
	}
	if d := maxRelDiff(gotBC.actor, wantBC.actor); len(gotBC.actor) != len(wantBC.actor) || !(d <= tol) {
		t.Errorf("bc actor weights: emu and cpu differ by %.3g of the largest value", d)
	} else {
		t.Logf("bc actor weights: emu and cpu differ by %.3g of the largest value", d)
	}
	offSameRun(t, offSynced(t, bc, true), gotBC)
}

// TestDeviceResumeOnAnotherDevice: an emu run killed after its step-300
// checkpoint and resumed on the CPU (and a CPU run resumed on emu) ends
// within rounding of the uninterrupted run, with config.json naming the
// new device.
func TestDeviceResumeOnAnotherDevice(t *testing.T) {
	for _, c := range []struct{ from, to string }{{"emu", "cpu"}, {"cpu", "emu"}} {
		t.Run(c.from+"-to-"+c.to, func(t *testing.T) {
			cfg := tinyConfig("sac")
			cfg.Device = c.from
			want := straightSynced(t, cfg)
			dir := t.TempDir() + "/b"
			killed(t, NewOnline, cfg, dir, 450)
			o := resumed(t, func(d string) (*Online, error) { return ResumeOnlineOn(d, c.to) }, dir)
			if o.Step() != 300 || o.Cfg.Device != c.to || (o.dev != nil) != (c.to == "emu") {
				t.Fatalf("resumed at step %d on device %q (learner %v)", o.Step(), o.Cfg.Device, o.dev != nil)
			}
			if err := o.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := syncedCapture(t, o)
			if got.updates != want.updates || got.adamT != want.adamT || got.step != want.step {
				t.Fatalf("counters: %+v, uninterrupted %+v", pick(got), pick(want))
			}
			for _, x := range []struct {
				what      string
				got, want []float32
			}{{"actor weights", got.actor, want.actor}, {"target critic weights", got.critic, want.critic},
				{"real buffer", got.real, want.real}} {
				if d := maxRelDiff(x.got, x.want); len(x.got) != len(x.want) || !(d <= 1e-4) {
					t.Errorf("%s: differ by %.3g of the largest value", x.what, d)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"device": "`+c.to+`"`) {
				t.Errorf("config.json does not name device %s:\n%s", c.to, b)
			}
		})
	}
}

// TestDeviceEmuModelRunMatchesCPU: short online ADMPO and MBPO runs with
// device emu (SAC's updates and the ADM's or the ensemble's fits on the
// emulated device) end within rounding of the CPU runs: the same counters,
// and the weights, the real and model buffers (the roll-outs of the model
// fitted on emu) within 1e-4 of the largest value.
func TestDeviceEmuModelRunMatchesCPU(t *testing.T) {
	ortskip.IfMissing(t)
	for _, algo := range []string{"admpo", "mbpo"} {
		t.Run(algo, func(t *testing.T) {
			cfg := tinyConfig(algo)
			want := straightSynced(t, cfg)
			cfg.Device = "emu"
			o, err := NewOnline(cfg, t.TempDir()+"/probe")
			if err != nil {
				t.Fatal(err)
			}
			switch m := o.dyn.(type) {
			case *dynamics.ADM:
				if m.FitCfg.Device == nil || m.FitCfg.Device != o.dev.d {
					t.Error("the ADM's fits do not run on the learner's device")
				}
			case *dynamics.Ensemble:
				if m.FitCfg.Device == nil || m.FitCfg.Device != o.dev.d {
					t.Error("the ensemble's fits do not run on the learner's device")
				}
			default:
				t.Errorf("model %T", o.dyn)
			}
			o.Close()
			got := straightSynced(t, cfg)
			compareModelRuns(t, got, want, "emu", "cpu")
			t.Logf("actor %.3g, target critic %.3g, model buffer %.3g", maxRelDiff(got.actor, want.actor),
				maxRelDiff(got.critic, want.critic), maxRelDiff(got.model, want.model))
		})
	}
}

func TestDeviceGraphEnv(t *testing.T) {
	for _, c := range []struct {
		env, device string
		actorEvery  int
		want        bool
	}{
		{"", "cuda", 1, true}, {"", "CUDA", 0, true}, {"", "cuda", 2, false}, {"", "emu", 1, false}, {"", "cpu", 1, false},
		{"0", "cuda", 1, false}, {"0", "emu", 1, false}, {"1", "emu", 1, true}, {"1", "cuda", 2, true},
	} {
		t.Setenv(GraphEnv, c.env)
		if got, err := deviceGraph(c.device, c.actorEvery); err != nil || got != c.want {
			t.Errorf("%s=%q, device %s, actor every %d: got %v, %v; want %v", GraphEnv, c.env, c.device, c.actorEvery, got, err, c.want)
		}
	}
	t.Setenv(GraphEnv, "yes")
	if _, err := deviceGraph("cuda", 1); err == nil {
		t.Errorf("%s=yes: no error", GraphEnv)
	}
	if _, err := newDevLearner("emu", nil); err == nil {
		t.Errorf("a device learner without an agent: no error")
	}
}

// TestDeviceBCCheckpointMidEpoch: a checkpoint written between evaluations
// of a BC run on emu holds the device's actor and Adam state and the last
// step's loss, not the host's stale copies.
func TestDeviceBCCheckpointMidEpoch(t *testing.T) {
	cfg := Fixtures.TinyOfflineConfig(t, "bc", "medium-replay", Fixtures.RandomHopperFile(t, 300))
	cfg.Device = "emu"
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for range 3 {
		if err := o.update(); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	f, err := ckpt.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var dev [][]float32
	for _, l := range o.sac.Actor.Net.Layers {
		dev = append(dev, make([]float32, len(l.W)), make([]float32, len(l.B)))
	}
	if err := o.bcDev.b.ActorWeights(dev); err != nil {
		t.Fatal(err)
	}
	w := dev[0]
	saved, err := f.F32("sac/actor/0/w", len(w))
	if err != nil {
		t.Fatal(err)
	}
	bitexact.Same(t, "checkpoint's actor layer 0 vs the device's", saved, w)
	if v, err := f.F32("bc/opt/t", 1); err != nil || v[0] != 3 {
		t.Errorf("checkpoint's BC Adam step count %v (%v), want 3", v, err)
	}
	if math.IsNaN(o.lastBC) || o.lastBC <= 0 {
		t.Errorf("last BC loss %v after three steps", o.lastBC)
	}
}

// TestDeviceBCResumeOnAnotherDevice: a BC run on emu killed after its
// update-200 checkpoint and resumed on the CPU (and a CPU run resumed on
// emu) ends within rounding (1e-4 of the largest weight) of the
// uninterrupted run: the checkpoint's actor and Adam state move between
// the host and the device.
func TestDeviceBCResumeOnAnotherDevice(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	for _, c := range []struct{ from, to string }{{"emu", "cpu"}, {"cpu", "emu"}} {
		t.Run(c.from+"-to-"+c.to, func(t *testing.T) {
			cfg := Fixtures.TinyOfflineConfig(t, "bc", "medium-replay", data)
			cfg.Device = c.from
			want := offSynced(t, cfg, false)
			o, _ := resumedToEnd(t, NewOffline, func(d string) (*Offline, error) { return ResumeOfflineOn(d, c.to) }, cfg, 250, 200)
			defer o.Close()
			if (o.bcDev != nil) != (c.to == "emu") || o.Cfg.Device != c.to {
				t.Fatalf("resumed on device %q with device BC trainer %v", o.Cfg.Device, o.bcDev != nil)
			}
			if err := o.syncBC(); err != nil {
				t.Fatal(err)
			}
			got := offCapture(o)
			if got.step != want.step || got.updates != want.updates || got.adamT != want.adamT {
				t.Fatalf("counters: %+v, uninterrupted %+v", got.counters(), want.counters())
			}
			if d := maxRelDiff(got.actor, want.actor); len(got.actor) != len(want.actor) || !(d <= 1e-4) {
				t.Errorf("actor weights differ by %.3g of the largest value", d)
			} else {
				t.Logf("actor weights differ by %.3g of the largest value", d)
			}
		})
	}
}

// TestRolloutDeviceEmuMatchesORT: a short online ADMPO run whose ADM rolls
// out on the emulated device (rollout_device emu; SAC's updates and the
// fits on emu too, sharing that device) ends within rounding of the run
// that rolls out on ONNX Runtime's CPU provider: the same counters, and
// the weights and the real and model buffers within 1e-4 of the largest
// value (the device roll-out equals ONNX Runtime's within float32
// rounding for the same seed and chunk rows).
func TestRolloutDeviceEmuMatchesORT(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := tinyConfig("admpo")
	cfg.Device = "emu"
	want := straightSynced(t, cfg)
	cfg.RolloutDevice = "emu"
	o, err := NewOnline(cfg, t.TempDir()+"/probe")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := o.dyn.(*dynamics.ADM); !ok || a.Dev == nil || o.rollDev != nil {
		t.Errorf("model %T: no device roller on the learner's device", o.dyn)
	}
	o.Close()
	got := straightSynced(t, cfg)
	compareModelRuns(t, got, want, "device roll-outs", "ONNX Runtime's")
	t.Logf("model buffer %.3g, actor %.3g", maxRelDiff(got.model, want.model), maxRelDiff(got.actor, want.actor))
}

// TestRolloutDeviceDoneSpec: with a device roller the run's roll-outs
// take the task's termination as a DoneSpec on the device (Done nil), the
// ONNX Runtime roller keeps the host Done func (and no spec), and a
// learned or no termination leaves the run no spec (the host Done stays).
// TestRolloutDeviceEmuMatchesORT runs the spec path (hopper's rule) and
// dynamics' TestDevRollerMatchesORT compares its transitions, done flags
// included, with ONNX Runtime's.
func TestRolloutDeviceDoneSpec(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := tinyConfig("admpo")
	cfg.Device, cfg.RolloutDevice = "emu", "emu"
	o, err := NewOnline(cfg, t.TempDir()+"/spec")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.task.DoneSpec == nil {
		t.Fatalf("task %s: no DoneSpec", o.task.Name)
	}
	a := o.dyn.(*dynamics.ADM)
	rc := infer.RollConfig{Horizon: 1, Done: o.task.Done}
	for _, own := range []bool{true, false} {
		r, err := o.roller(a, o.Cfg.inferOptions(), own)
		if err != nil {
			t.Fatal(err)
		}
		got := o.deviceDone(r, rc)
		r.Close()
		if (got.Done == nil) != own || (got.DoneSpec != nil) != own || own && got.DoneSpec != o.task.DoneSpec {
			t.Errorf("device roller %v: Done set %v, DoneSpec %v", own, got.Done != nil, got.DoneSpec)
		}
	}
	for _, term := range []string{"learned", "none"} {
		c := cfg
		c.Termination = term
		o, err := NewOnline(c, t.TempDir()+"/"+term)
		if err != nil {
			t.Fatal(err)
		}
		if o.task.DoneSpec != nil {
			t.Errorf("termination %s: DoneSpec %v", term, o.task.DoneSpec)
		}
		o.Close()
	}
}

// TestRolloutDeviceConfig: a rollout device is admpo's only, an unknown
// one is refused, and cuda needs the admpo_cuda tag.
func TestRolloutDeviceConfig(t *testing.T) {
	for _, c := range []struct {
		algo, dev, want string
	}{{"mbpo", "emu", "rolls the ADM out (admpo only)"}, {"sac", "emu", "rolls the ADM out (admpo only)"},
		{"admpo", "tpu", "unknown rollout device"}} {
		cfg := tinyConfig(c.algo)
		cfg.RolloutDevice = c.dev
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want %q", c.algo, c.dev, err, c.want)
		}
	}
	cfg := tinyConfig("admpo")
	cfg.RolloutDevice = "cuda"
	if err := cfg.Validate(); (err == nil) != CUDABuilt || !CUDABuilt && !strings.Contains(err.Error(), "admpo_cuda") {
		t.Errorf("rollout device cuda (built with it: %v): %v", CUDABuilt, err)
	}
}

// compareModelRuns fails unless the model-based runs got and want (named
// so in messages) have the same counters and their weights and real and
// model buffers agree within 1e-4 of the largest value.
func compareModelRuns(t *testing.T, got, want runState, gotName, wantName string) {
	t.Helper()
	if got.step != want.step || got.updates != want.updates || got.adamT != want.adamT || got.modelN != want.modelN {
		t.Fatalf("counters: %s %+v, %s %+v", gotName, pick(got), wantName, pick(want))
	}
	const tol = 1e-4
	for _, x := range []struct {
		what      string
		got, want []float32
	}{{"actor weights", got.actor, want.actor}, {"target critic weights", got.critic, want.critic},
		{"real buffer", got.real, want.real}, {"model buffer", got.model, want.model}} {
		if d := maxRelDiff(x.got, x.want); len(x.got) != len(x.want) || !(d <= tol) {
			t.Errorf("%s: %s and %s differ by %.3g of the largest value (%d and %d values)", x.what, gotName, wantName, d,
				len(x.got), len(x.want))
		}
	}
}
