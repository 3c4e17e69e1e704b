package train

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/sac"
)

// Devices lists the values of the device setting: cpu (package sac's
// updates on the host), emu (the device learner on the host emulation of
// the kernels) and cuda (on the GPU; admpo_cuda builds only).
var Devices = []string{"cpu", "emu", "cuda"}

// CheckDevice returns an error unless name is a device setting this binary
// can run ("" is cpu); cuda needs a binary built with the admpo_cuda tag.
func CheckDevice(name string) error {
	return checkDevice("device", name, "cpu, emu or cuda", "", "cpu", "emu")
}

// checkDevice returns an error unless name is cuda (in an admpo_cuda
// build) or one of hosts (any case); setting names it, valid lists the
// values in the error.
func checkDevice(setting, name, valid string, hosts ...string) error {
	n := strings.ToLower(name)
	switch {
	case n == "cuda" && !CUDABuilt:
		return fmt.Errorf("train: %s cuda needs a binary built with the admpo_cuda tag (go build -tags admpo_cuda)", setting)
	case n == "cuda" || slices.Contains(hosts, n):
		return nil
	}
	return fmt.Errorf("train: unknown %s %q (%s)", setting, name, valid)
}

// CheckRolloutDevice returns an error unless name is a roll-out device
// setting this binary can run: "" (ONNX Runtime), emu or cuda (the
// admpo_cuda tag).
func CheckRolloutDevice(name string) error {
	return checkDevice("rollout device", name, "emu or cuda; unset: ONNX Runtime", "", "emu")
}

// openRollDevice sets dc to roll the ADM out on the named device ("":
// ONNX Runtime): the learner's device dl (named learner) when the names
// match, else one it opens and returns for its caller to close.
func openRollDevice(name, learner string, dl *devLearner, dc *dynamics.Config) (own device.Device, err error) {
	if name == "" {
		return nil, nil
	}
	if err := CheckRolloutDevice(name); err != nil {
		return nil, err
	}
	dc.RollDevice = strings.ToLower(name)
	if d, _ := dl.device(); d != nil && strings.EqualFold(name, learner) {
		dc.RollOn = d
		return nil, nil
	}
	if own, err = openDevice(name); err != nil {
		return nil, fmt.Errorf("train: rollout device: %w", err)
	}
	dc.RollOn = own
	return own, nil
}

// OpenDevice opens the named device (emu or cuda; nil for cpu) for work
// outside a run, e.g. admpo bench rollout's device engines; its caller
// closes it.
func OpenDevice(name string) (device.Device, error) { return openDevice(name) }

// openDevice opens the named device, nil for cpu.
func openDevice(name string) (device.Device, error) {
	if err := CheckDevice(name); err != nil {
		return nil, err
	}
	switch strings.ToLower(name) {
	case "emu":
		return emu.New(), nil
	case "cuda":
		return openCUDA()
	}
	return nil, nil
}

// devLearner runs a sac.Agent's updates on a sacdev.Learner.
type devLearner struct {
	d     device.Device
	l     *sacdev.Learner
	graph bool // GraphEnv chose graphs (the model fits record theirs too)
}

// GraphEnv names the environment variable that chooses whether runs on a
// device record each SAC update once as a device graph (a CUDA graph on
// cuda) and replay it (sacdev.Config.Graph), and BC's step and the ADM's and
// the ensemble's train steps likewise (sacdev.BCConfig.Graph,
// admdev.Config.Graph, ensdev.Config.Graph): 1 always (an error where the
// SAC update differs from one update to the next: actor_every above 1), 0
// never, unset: on cuda where the SAC update allows it, off on emu. Graphs
// change no arithmetic; on an H100 they made the SAC update 2.7x and the
// ADM and ensemble steps 2x faster (docs/benchmarks.md, 2026-11-28).
const GraphEnv = "ADMPO_DEVICE_GRAPH"

// deviceGraph reports whether runs on the named device record graphs
// (GraphEnv), for a SAC learner that steps the actor every actorEvery
// updates (0 where no SAC learner runs, as for BC).
func deviceGraph(name string, actorEvery int) (bool, error) {
	switch v := os.Getenv(GraphEnv); v {
	case "":
		return strings.ToLower(name) == "cuda" && actorEvery <= 1, nil
	case "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("train: %s=%q: want 0 or 1 (or unset: on for cuda)", GraphEnv, v)
	}
}

// newDevLearner opens the named device and a learner sized for s (with
// graphs as GraphEnv decides), and makes it run s's updates; nil for cpu.
func newDevLearner(name string, s *sac.Agent) (*devLearner, error) {
	if s == nil {
		return nil, fmt.Errorf("train: device %s: no SAC agent", name)
	}
	graph, err := deviceGraph(name, s.Cfg.ActorEvery)
	if err != nil {
		return nil, err
	}
	d, err := openDevice(name)
	if err != nil || d == nil {
		return nil, err
	}
	return newDevLearnerOn(d, name, s, graph)
}

// newDevLearnerOn is newDevLearner on the open device d (named name in
// errors), which it closes on failure.
func newDevLearnerOn(d device.Device, name string, s *sac.Agent, graph bool) (*devLearner, error) {
	c, a := s.Cfg, s.Actor
	l, err := sacdev.New(d, sacdev.Config{ObsDim: a.ObsDim, ActDim: a.ActDim, Hidden: c.Hidden, Batch: c.BatchSize,
		Gamma: c.Gamma, Tau: c.Tau, ActorLR: c.ActorLR, CriticLR: c.CriticLR, AlphaLR: c.AlphaLR,
		AutoAlpha: c.AutoAlpha, TargetEntropy: c.TargetEntropy, ActorEvery: c.ActorEvery,
		LogStdMin: a.LogStdMin, LogStdMax: a.LogStdMax, Scale: a.Scale, Bias: a.Bias, Graph: graph})
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("train: device %s: %w", name, err)
	}
	dl := &devLearner{d: d, l: l, graph: graph}
	if err := s.SetLearner(dl); err != nil {
		_ = dl.Close()
		return nil, fmt.Errorf("train: device %s: %w", name, err)
	}
	return dl, nil
}

// device is the learner's device for the run's other device work (the
// ADM's fits) and whether that records device graphs; nil for nil.
func (dl *devLearner) device() (device.Device, bool) {
	if dl == nil {
		return nil, false
	}
	return dl.d, dl.graph
}

// Close frees the learner and closes the device; nil does nothing.
func (dl *devLearner) Close() error {
	if dl == nil {
		return nil
	}
	err := dl.l.Close()
	if cerr := dl.d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Update uploads b and the noise and queues one update; it reads nothing
// back (Stats does, when the run reports).
func (dl *devLearner) Update(b *buffer.Batch, epsNext, eps []float32, actorLR float64) (bool, error) {
	dl.l.SetActorLR(actorLR)
	if err := dl.l.Upload(sacdev.Batch{Obs: b.Obs, Act: b.Act, Rew: b.Rew, Terminal: b.Terminal,
		NextObs: b.NextObs, EpsNext: epsNext, Eps: eps}); err != nil {
		return false, err
	}
	if err := dl.l.Update(); err != nil {
		return false, err
	}
	return dl.l.ActorLast(), nil
}

// Stats downloads the last update's losses: a device synchronisation,
// which sac.Agent.LastStats asks for once per update at most.
func (dl *devLearner) Stats() (sac.Stats, error) {
	st, err := dl.l.Stats()
	if err != nil {
		return sac.Stats{}, err
	}
	return sac.Stats{CriticLoss: st.CriticLoss, ActorLoss: st.ActorLoss, AlphaLoss: st.AlphaLoss, Alpha: st.Alpha,
		Q1: st.Q1, Q2: st.Q2, LogPi: st.LogPi, ActorUpdated: st.ActorUpdated}, nil
}

// PullActor downloads the actor's weights.
func (dl *devLearner) PullActor(dst [][]float32) error { return dl.l.ActorWeights(dst) }

// Pull downloads the whole state into st's slices.
func (dl *devLearner) Pull(st *sac.State) error {
	w, err := dl.l.Weights()
	if err != nil {
		return err
	}
	o, err := dl.l.Optim()
	if err != nil {
		return err
	}
	for _, x := range []struct{ dst, src [][]float32 }{{st.Actor, w.Actor}, {st.Critic1, w.Critic1},
		{st.Critic2, w.Critic2}, {st.Target1, w.Target1}, {st.Target2, w.Target2},
		{st.ActorOpt.M, o.ActorM}, {st.ActorOpt.V, o.ActorV}, {st.CriticOpt.M, o.CriticM}, {st.CriticOpt.V, o.CriticV},
		{st.AlphaOpt.M, [][]float32{{o.AlphaM}}}, {st.AlphaOpt.V, [][]float32{{o.AlphaV}}}} {
		if err := copyTensors(x.dst, x.src); err != nil {
			return fmt.Errorf("train: device state: %w", err)
		}
	}
	st.LogAlpha[0] = w.LogAlpha
	st.ActorOpt.T, st.CriticOpt.T, st.AlphaOpt.T, st.Updates = o.ActorT, o.CriticT, o.AlphaT, o.Updates
	return nil
}

// Push uploads st.
func (dl *devLearner) Push(st *sac.State) error {
	if err := dl.l.SetWeights(sacdev.Weights{Actor: st.Actor, Critic1: st.Critic1, Critic2: st.Critic2,
		Target1: st.Target1, Target2: st.Target2, LogAlpha: st.LogAlpha[0]}); err != nil {
		return err
	}
	if len(st.AlphaOpt.M) != 1 || len(st.AlphaOpt.M[0]) != 1 || len(st.AlphaOpt.V) != 1 || len(st.AlphaOpt.V[0]) != 1 {
		return fmt.Errorf("train: device state: alpha optimiser holds %d tensors, want 1 of 1 value", len(st.AlphaOpt.M))
	}
	return dl.l.SetOptim(sacdev.Optim{ActorM: st.ActorOpt.M, ActorV: st.ActorOpt.V, CriticM: st.CriticOpt.M,
		CriticV: st.CriticOpt.V, AlphaM: st.AlphaOpt.M[0][0], AlphaV: st.AlphaOpt.V[0][0],
		ActorT: st.ActorOpt.T, CriticT: st.CriticOpt.T, AlphaT: st.AlphaOpt.T, Updates: st.Updates})
}

// copyTensors copies src into dst, tensor by tensor, checking sizes.
func copyTensors(dst, src [][]float32) error {
	if len(dst) != len(src) {
		return fmt.Errorf("%d tensors, want %d", len(src), len(dst))
	}
	for i := range dst {
		if len(dst[i]) != len(src[i]) {
			return fmt.Errorf("tensor %d has %d values, want %d", i, len(src[i]), len(dst[i]))
		}
		copy(dst[i], src[i])
	}
	return nil
}

// devBC runs a sac.BC's steps on a sacdev.BC.
type devBC struct {
	d device.Device
	b *sacdev.BC
}

// newDevBC opens the named device and a BC trainer sized for bc's actor and
// batches of batch rows (with graphs as GraphEnv decides), and makes it run
// bc's steps; nil for cpu.
func newDevBC(name string, bc *sac.BC, batch int) (*devBC, error) {
	graph, err := deviceGraph(name, 0)
	if err != nil {
		return nil, err
	}
	d, err := openDevice(name)
	if err != nil || d == nil {
		return nil, err
	}
	a := bc.Actor
	var hidden []int
	for _, l := range a.Net.Layers[:len(a.Net.Layers)-1] {
		hidden = append(hidden, l.Out)
	}
	b, err := sacdev.NewBC(d, sacdev.BCConfig{ObsDim: a.ObsDim, ActDim: a.ActDim, Hidden: hidden, Batch: batch,
		LR: bc.Opt.LR, Scale: a.Scale, Bias: a.Bias, Graph: graph})
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("train: device %s: %w", name, err)
	}
	db := &devBC{d: d, b: b}
	if err := bc.SetLearner(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("train: device %s: %w", name, err)
	}
	return db, nil
}

// Close frees the trainer and closes the device; nil does nothing.
func (db *devBC) Close() error {
	if db == nil {
		return nil
	}
	err := db.b.Close()
	if cerr := db.d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Step uploads the batch's observations and actions and queues one step.
func (db *devBC) Step(b *buffer.Batch, lr float64) error {
	db.b.SetLR(lr)
	if err := db.b.Upload(b.Obs, b.Act); err != nil {
		return err
	}
	return db.b.Step()
}

// Loss downloads the last step's loss.
func (db *devBC) Loss() (float64, error) { return db.b.Loss() }

// Pull downloads the actor and the Adam state.
func (db *devBC) Pull(actor [][]float32, opt *models.Adam) error {
	if err := db.b.ActorWeights(actor); err != nil {
		return err
	}
	o := device.AdamState{M: opt.M, V: opt.V}
	if err := db.b.OptimInto(&o); err != nil {
		return err
	}
	opt.T = o.T
	return nil
}

// Push uploads the actor and the Adam state.
func (db *devBC) Push(actor [][]float32, opt *models.Adam) error {
	if err := db.b.SetWeights(actor); err != nil {
		return err
	}
	return db.b.SetOptim(device.AdamState{M: opt.M, V: opt.V, T: opt.T})
}
