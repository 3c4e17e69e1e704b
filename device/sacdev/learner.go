package sacdev

import (
	"errors"
	"fmt"
	"math"

	"github.com/admpo/admpo/device"
)

// Config holds the learner's sizes and SAC's hyper-parameters (package
// sac's Config keys of the same names).
type Config struct {
	ObsDim, ActDim int
	Hidden         []int // hidden layer sizes of actor and critics (256, 256)
	Batch          int
	Gamma, Tau     float64
	// Learning rates, as float64 like sac.Agent's optimisers: Adam's step
	// constants are formed in float64 and rounded once.
	ActorLR, CriticLR, AlphaLR float64
	AutoAlpha                  bool
	TargetEntropy              float64
	ActorEvery                 int // the actor and α step every ActorEvery updates (0 or 1: every one)
	// The actor's log-std bounds (soft clamp) and action scale and bias
	// ([ActDim]), as models.Actor holds them.
	LogStdMin, LogStdMax float32
	Scale, Bias          []float32
	// Graph records the update's launches and products once (the second
	// Update) as a device graph and replays it from then on: one launch per
	// update instead of ~140 on cuda. It needs a device.Capturer and
	// ActorEvery <= 1 (every update queues the same work).
	Graph bool
}

// Weights are the learner's parameters on the host, each network's in
// models' order (W0, B0, W1, B1, ...).
type Weights struct {
	Actor, Critic1, Critic2, Target1, Target2 [][]float32
	LogAlpha                                  float32
}

// Batch is one update's transitions and noise on the host: Obs, NextObs
// [Batch·ObsDim]; Act, EpsNext, Eps [Batch·ActDim]; Rew, Terminal [Batch].
// EpsNext is the standard normal noise of the next actions (the target),
// Eps that of the actor step, as sac.Agent.Update draws them.
type Batch struct {
	Obs, Act, Rew, Terminal, NextObs, EpsNext, Eps []float32
}

// Stats reports the last Update, as sac.Stats. ActorLoss, AlphaLoss and
// LogPi are those of the learner's last actor step: the last Update's when
// ActorUpdated, else an earlier one's (0 before the learner's first).
type Stats struct {
	CriticLoss float64 // mean((Q1-y)²) + mean((Q2-y)²)
	ActorLoss  float64 // mean(α·logπ - min(Q1,Q2)) of the last actor step
	AlphaLoss  float64 // -log α·(mean logπ + H) of the last actor step; 0 without AutoAlpha
	Alpha      float64 // α after the update
	Q1, Q2     float64 // mean Q-values on the batch
	LogPi      float64 // mean log-density of the last actor step's samples
	// ActorUpdated is false for an update that skipped the actor and α.
	ActorUpdated bool
}

// Learner is SAC's learner on a device. It is not safe for concurrent use.
type Learner struct {
	cfg     Config
	d       device.Device
	actor   *net
	critics [2]*net
	targets [2]*net
	// Adam step counts: critics (one optimiser over both), actor, α.
	criticT, actorT, alphaT int
	updates                 int
	actorLast               bool // the last update stepped the actor
	actorDone               bool // an update stepped the actor (actorSums hold its sums)

	// log α and its optimiser's state, one element each.
	logAlpha, alphaGrad, alphaM, alphaV, alphaLoss device.Buffer
	// Each optimiser's step constants for adam_k (8 values), uploaded
	// before each update so that a graph replays with the current ones.
	kCritic, kActor, kAlpha device.Buffer
	replay                  device.Replay // the recorded update (Config.Graph)
	// The batch and noise.
	obs, act, rew, term, nextObs, epsNext, eps device.Buffer
	idx                                        device.Buffer // int32 [Batch], for Sample
	// Scratch: the actor head's outputs and saved values, the critics'
	// input, targets, gradients and the per-row terms of the losses.
	scale, bias, action, logp, xs, ths, critIn, y, dact device.Buffer
	qs, sqerr                                           [2]device.Buffer
	rowLoss                                             device.Buffer
	sums                                                []device.Buffer // one element each, for Stats
	// The last actor step's sums of the actor loss's rows and of logπ,
	// kept for Stats (the next update's target pass overwrites logp).
	actorSums [2]device.Buffer
	all       []device.Buffer
}

// New allocates a learner on d with zero weights (SetWeights sets them)
// and log α = 0.
func New(d device.Device, cfg Config) (*Learner, error) {
	od, ad, b := cfg.ObsDim, cfg.ActDim, cfg.Batch
	if od < 1 || ad < 1 || b < 1 || len(cfg.Hidden) == 0 || len(cfg.Scale) != ad || len(cfg.Bias) != ad {
		return nil, fmt.Errorf("sacdev: invalid sizes obs %d, act %d, batch %d, hidden %v, scale %d, bias %d",
			od, ad, b, cfg.Hidden, len(cfg.Scale), len(cfg.Bias))
	}
	for _, h := range cfg.Hidden {
		if h < 1 {
			return nil, fmt.Errorf("sacdev: hidden sizes %v must be positive", cfg.Hidden)
		}
	}
	if !(cfg.LogStdMax > cfg.LogStdMin) {
		return nil, fmt.Errorf("sacdev: log-std bounds [%v, %v]", cfg.LogStdMin, cfg.LogStdMax)
	}
	if cfg.Graph {
		if _, ok := d.(device.Capturer); !ok {
			return nil, fmt.Errorf("sacdev: graph: device %s cannot record graphs", d.Name())
		}
		if cfg.ActorEvery > 1 {
			return nil, fmt.Errorf("sacdev: graph: actor every %d updates (a graph needs the same work every update: 1)", cfg.ActorEvery)
		}
	}
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	cfg.Scale, cfg.Bias = append([]float32(nil), cfg.Scale...), append([]float32(nil), cfg.Bias...)
	l := &Learner{cfg: cfg, d: d}
	alloc := func(n int) (device.Buffer, error) {
		buf, err := d.Alloc(device.Float32, n)
		if err == nil {
			l.all = append(l.all, buf)
		}
		return buf, err
	}
	fail := func(err error) (*Learner, error) {
		_ = l.Close()
		return nil, fmt.Errorf("sacdev: new: %w", err)
	}
	sizes := func(in, out int) []int { return append(append([]int{in}, cfg.Hidden...), out) }
	var err error
	if l.actor, err = newNet(alloc, sizes(od, 2*ad), b, true); err != nil {
		return fail(err)
	}
	for i := range 2 {
		if l.critics[i], err = newNet(alloc, sizes(od+ad, 1), b, true); err != nil {
			return fail(err)
		}
		if l.targets[i], err = newNet(alloc, sizes(od+ad, 1), b, false); err != nil {
			return fail(err)
		}
	}
	for _, x := range []struct {
		dst *device.Buffer
		n   int
	}{
		{&l.logAlpha, 1}, {&l.alphaGrad, 1}, {&l.alphaM, 1}, {&l.alphaV, 1}, {&l.alphaLoss, 1},
		{&l.kCritic, 8}, {&l.kActor, 8}, {&l.kAlpha, 8},
		{&l.obs, b * od}, {&l.act, b * ad}, {&l.rew, b}, {&l.term, b}, {&l.nextObs, b * od},
		{&l.epsNext, b * ad}, {&l.eps, b * ad},
		{&l.scale, ad}, {&l.bias, ad}, {&l.action, b * ad}, {&l.logp, b}, {&l.xs, b * ad}, {&l.ths, b * ad},
		{&l.critIn, b * (od + ad)}, {&l.y, b}, {&l.dact, b * ad},
		{&l.qs[0], b}, {&l.qs[1], b}, {&l.sqerr[0], b}, {&l.sqerr[1], b}, {&l.rowLoss, b},
	} {
		if *x.dst, err = alloc(x.n); err != nil {
			return fail(err)
		}
	}
	if l.idx, err = d.Alloc(device.Int32, b); err != nil {
		return fail(err)
	}
	l.all = append(l.all, l.idx)
	for range 4 {
		s, err := alloc(1)
		if err != nil {
			return fail(err)
		}
		l.sums = append(l.sums, s)
	}
	for i := range l.actorSums {
		if l.actorSums[i], err = alloc(1); err != nil {
			return fail(err)
		}
	}
	if err := d.Upload(l.scale, cfg.Scale); err != nil {
		return fail(err)
	}
	if err := d.Upload(l.bias, cfg.Bias); err != nil {
		return fail(err)
	}
	return l, nil
}

// Updates returns the number of updates done.
func (l *Learner) Updates() int { return l.updates }

// SetActorLR sets the actor's learning rate for the next updates (e.g.
// sac.Config.ActorLRAt's decay).
func (l *Learner) SetActorLR(lr float64) { l.cfg.ActorLR = lr }

func (l *Learner) nets() []*net {
	return []*net{l.actor, l.critics[0], l.critics[1], l.targets[0], l.targets[1]}
}

// SetWeights uploads w.
func (l *Learner) SetWeights(w Weights) error {
	for i, ps := range [][][]float32{w.Actor, w.Critic1, w.Critic2, w.Target1, w.Target2} {
		n := l.nets()[i]
		if len(ps) != len(n.params) {
			return fmt.Errorf("sacdev: set weights: network %d has %d tensors, want %d", i, len(ps), len(n.params))
		}
		for j, p := range ps {
			if len(p) != n.params[j].Len() {
				return fmt.Errorf("sacdev: set weights: network %d tensor %d has %d values, want %d", i, j, len(p), n.params[j].Len())
			}
			if err := l.d.Upload(n.params[j], p); err != nil {
				return fmt.Errorf("sacdev: set weights: %w", err)
			}
		}
	}
	if err := l.d.Upload(l.logAlpha, []float32{w.LogAlpha}); err != nil {
		return fmt.Errorf("sacdev: set weights: %w", err)
	}
	return nil
}

// Weights downloads the parameters; it waits for the device.
func (l *Learner) Weights() (Weights, error) {
	var w Weights
	for i, dst := range []*[][]float32{&w.Actor, &w.Critic1, &w.Critic2, &w.Target1, &w.Target2} {
		for _, p := range l.nets()[i].params {
			v := make([]float32, p.Len())
			if err := l.d.Download(v, p); err != nil {
				return w, fmt.Errorf("sacdev: weights: %w", err)
			}
			*dst = append(*dst, v)
		}
	}
	var la [1]float32
	if err := l.d.Download(la[:], l.logAlpha); err != nil {
		return w, fmt.Errorf("sacdev: weights: %w", err)
	}
	w.LogAlpha = la[0]
	return w, nil
}

// Upload copies a batch and its noise to the device for the next Update.
func (l *Learner) Upload(b Batch) error {
	for _, x := range []struct {
		name string
		dst  device.Buffer
		src  []float32
	}{{"obs", l.obs, b.Obs}, {"act", l.act, b.Act}, {"rew", l.rew, b.Rew}, {"terminal", l.term, b.Terminal},
		{"next_obs", l.nextObs, b.NextObs}, {"eps_next", l.epsNext, b.EpsNext}, {"eps", l.eps, b.Eps}} {
		if len(x.src) != x.dst.Len() {
			return fmt.Errorf("sacdev: upload: %s has %d values, want %d", x.name, len(x.src), x.dst.Len())
		}
		if err := l.d.Upload(x.dst, x.src); err != nil {
			return fmt.Errorf("sacdev: upload %s: %w", x.name, err)
		}
	}
	return nil
}

// head queues the actor's sample for obs and noise eps into action and logp
// (and the values sac_head_grad needs).
func (l *Learner) head(obs, eps device.Buffer) error {
	if err := l.actor.forward(l.d, obs); err != nil {
		return fmt.Errorf("actor: %w", err)
	}
	half, off, lc := l.headConsts()
	if err := l.d.Launch("sac_head", l.cfg.Batch, l.actor.out(), eps, l.scale, l.bias, l.action, l.logp,
		l.xs, l.ths, l.cfg.ActDim, half, off, lc); err != nil {
		return fmt.Errorf("actor head: %w", err)
	}
	return nil
}

// headConsts are the soft clamp's half range and offset and the
// log-density's constant, rounded as models' actor graph rounds them.
func (l *Learner) headConsts() (half, off, logpConst float32) {
	h := 0.5 * float64(l.cfg.LogStdMax-l.cfg.LogStdMin)
	return float32(h), float32(float64(l.cfg.LogStdMin) + h),
		float32(float64(l.cfg.ActDim) * (-0.5*math.Log(2*math.Pi) - 2*math.Ln2))
}

// critIn queues the critics' input [obs, act].
func (l *Learner) concat(obs, act device.Buffer) error {
	od, ad := l.cfg.ObsDim, l.cfg.ActDim
	return l.d.Launch("concat_cols", l.cfg.Batch*(od+ad), l.critIn, obs, act, od, ad)
}

// Update queues one SAC update on the uploaded batch (see the package
// documentation).
func (l *Learner) Update() error {
	if err := l.update(); err != nil {
		return fmt.Errorf("sacdev: update %d: %w", l.updates+1, err)
	}
	l.updates++
	return nil
}

func (l *Learner) update() error {
	l.actorLast = l.cfg.ActorEvery <= 1 || (l.updates+1)%l.cfg.ActorEvery == 0
	if err := l.stepConstants(); err != nil {
		return err
	}
	return l.replay.Run(l.d, l.cfg.Graph, l.queue)
}

// stepConstants counts this update's optimiser steps and uploads their Adam
// constants (formed in float64 and rounded once, as models.Adam does).
func (l *Learner) stepConstants() error {
	upload := func(k device.Buffer, t int, lr float64) error {
		if err := l.d.Upload(k, device.AdamK(t, lr)); err != nil {
			return fmt.Errorf("adam constants: %w", err)
		}
		return nil
	}
	l.criticT++
	if err := upload(l.kCritic, l.criticT, l.cfg.CriticLR); err != nil || !l.actorLast {
		return err
	}
	l.actorT++
	l.actorDone = true
	if err := upload(l.kActor, l.actorT, l.cfg.ActorLR); err != nil || !l.cfg.AutoAlpha {
		return err
	}
	l.alphaT++
	return upload(l.kAlpha, l.alphaT, l.cfg.AlphaLR)
}

// queue queues one update's launches and products.
func (l *Learner) queue() error {
	d, b := l.d, l.cfg.Batch
	inv := float32(1 / float64(b))
	// Target: y = r + γ(1-d)(min Q'(s',a') - α logπ(a'|s')).
	if err := l.head(l.nextObs, l.epsNext); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if err := l.concat(l.nextObs, l.action); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	for i, t := range l.targets {
		if err := t.forward(d, l.critIn); err != nil {
			return fmt.Errorf("target critic %d: %w", i+1, err)
		}
	}
	if err := d.Launch("sac_target", b, l.y, l.rew, l.term, l.targets[0].out(), l.targets[1].out(), l.logp,
		l.logAlpha, float32(l.cfg.Gamma)); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	// Critics: Adam on mean((Q1-y)²) + mean((Q2-y)²).
	if err := l.concat(l.obs, l.act); err != nil {
		return fmt.Errorf("critics: %w", err)
	}
	for i, c := range l.critics {
		if err := c.forward(d, l.critIn); err != nil {
			return fmt.Errorf("critic %d: %w", i+1, err)
		}
		q := c.out()
		for _, k := range []struct {
			name string
			args []any
		}{
			{"sq_err", []any{q, l.y, l.sqerr[i]}},
			{"mse_grad", []any{q, l.y, c.outGrad(), 2 * inv}},
			{"take_cols", []any{l.qs[i], q, 1, 1, 0, 0}},
		} {
			if err := d.Launch(k.name, b, k.args...); err != nil {
				return fmt.Errorf("critic %d loss: %w", i+1, err)
			}
		}
		if err := c.backward(d, l.critIn, true, false); err != nil {
			return fmt.Errorf("critic %d: %w", i+1, err)
		}
	}
	for i, c := range l.critics {
		if err := l.adam(c, l.kCritic); err != nil {
			return fmt.Errorf("critic %d: %w", i+1, err)
		}
	}
	if l.actorLast {
		if err := l.actorStep(inv); err != nil {
			return err
		}
	}
	// Targets: Q' ← τ·Q + (1-τ)·Q'.
	for i, t := range l.targets {
		for j, p := range t.params {
			if err := d.Launch("polyak", p.Len(), p, l.critics[i].params[j], float32(l.cfg.Tau)); err != nil {
				return fmt.Errorf("target critic %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// actorStep queues the actor's and α's steps.
func (l *Learner) actorStep(inv float32) error {
	d, b, od, ad := l.d, l.cfg.Batch, l.cfg.ObsDim, l.cfg.ActDim
	if err := l.head(l.obs, l.eps); err != nil {
		return fmt.Errorf("actor step: %w", err)
	}
	if err := l.concat(l.obs, l.action); err != nil {
		return fmt.Errorf("actor step: %w", err)
	}
	for i, c := range l.critics {
		if err := c.forward(d, l.critIn); err != nil {
			return fmt.Errorf("actor step: critic %d: %w", i+1, err)
		}
	}
	c1, c2 := l.critics[0], l.critics[1]
	if err := d.Launch("sac_actor_loss", b, c1.out(), c2.out(), l.logp, l.logAlpha, c1.outGrad(), c2.outGrad(),
		l.rowLoss, inv); err != nil {
		return fmt.Errorf("actor step: %w", err)
	}
	for i, src := range []device.Buffer{l.rowLoss, l.logp} {
		if err := d.Launch("col_sum", 1, src, l.actorSums[i], b); err != nil {
			return fmt.Errorf("actor step: %w", err)
		}
	}
	// The action's gradient through both critics (their weights get none).
	for i, c := range l.critics {
		if err := c.backward(d, l.critIn, false, true); err != nil {
			return fmt.Errorf("actor step: critic %d: %w", i+1, err)
		}
		if err := d.Launch("take_cols", b*ad, l.dact, c.dacts[0], ad, od+ad, od, i); err != nil {
			return fmt.Errorf("actor step: critic %d: %w", i+1, err)
		}
	}
	half, off, _ := l.headConsts()
	if err := d.Launch("sac_head_grad", b, l.dact, l.eps, l.scale, l.xs, l.ths, l.logAlpha, l.actor.outGrad(),
		ad, half, off, inv); err != nil {
		return fmt.Errorf("actor step: %w", err)
	}
	if err := l.actor.backward(d, l.obs, true, false); err != nil {
		return fmt.Errorf("actor step: actor: %w", err)
	}
	if err := l.adam(l.actor, l.kActor); err != nil {
		return fmt.Errorf("actor step: %w", err)
	}
	if !l.cfg.AutoAlpha {
		return nil
	}
	// log α ← Adam on -mean(log α·(logπ + H)); gradient -(mean logπ + H),
	// from the sum of logπ taken above.
	if err := d.Launch("sac_alpha_grad", 1, l.alphaGrad, l.alphaLoss, l.actorSums[1], l.logAlpha, b,
		float32(l.cfg.TargetEntropy)); err != nil {
		return fmt.Errorf("alpha step: %w", err)
	}
	return l.adamStep(l.kAlpha, l.logAlpha, l.alphaGrad, l.alphaM, l.alphaV)
}

// adam queues one Adam step of n's weights with the constants in k.
func (l *Learner) adam(n *net, k device.Buffer) error {
	for i, p := range n.params {
		if err := l.adamStep(k, p, n.grads[i], n.m[i], n.v[i]); err != nil {
			return err
		}
	}
	return nil
}

// adamStep queues an Adam step on p with gradient g, moments m, v and the
// constants in k (stepConstants).
func (l *Learner) adamStep(k, p, g, m, v device.Buffer) error {
	if err := l.d.Launch("adam_k", p.Len(), p, g, m, v, k); err != nil {
		return fmt.Errorf("adam: %w", err)
	}
	return nil
}

// ActorLast tells whether the last Update stepped the actor and α (the
// ActorEvery schedule); it reads nothing from the device.
func (l *Learner) ActorLast() bool { return l.actorLast }

// Stats reads back the last Update's losses (and the last actor step's):
// it waits for the device. Update does not read anything back, so a caller
// that asks for Stats only when it reports them keeps the device queue
// free of synchronisations in between.
func (l *Learner) Stats() (Stats, error) {
	st := Stats{ActorUpdated: l.actorLast}
	if l.updates == 0 {
		return st, errors.New("sacdev: stats: no update yet")
	}
	b := l.cfg.Batch
	srcs := []device.Buffer{l.sqerr[0], l.sqerr[1], l.qs[0], l.qs[1]}
	vals := make([]float64, len(srcs)+len(l.actorSums))
	for k, src := range srcs {
		if err := l.d.Launch("col_sum", 1, src, l.sums[k], b); err != nil {
			return st, fmt.Errorf("sacdev: stats: %w", err)
		}
	}
	sums := append(append([]device.Buffer(nil), l.sums...), l.actorSums[:]...)
	if !l.actorDone {
		sums = sums[:len(srcs)]
	}
	for k, s := range sums {
		var v [1]float32
		if err := l.d.Download(v[:], s); err != nil {
			return st, fmt.Errorf("sacdev: stats: %w", err)
		}
		vals[k] = float64(v[0]) / float64(b)
	}
	st.CriticLoss, st.Q1, st.Q2 = vals[0]+vals[1], vals[2], vals[3]
	if l.actorDone {
		st.ActorLoss, st.LogPi = vals[4], vals[5]
		if l.cfg.AutoAlpha {
			var v [1]float32
			if err := l.d.Download(v[:], l.alphaLoss); err != nil {
				return st, fmt.Errorf("sacdev: stats: %w", err)
			}
			st.AlphaLoss = float64(v[0])
		}
	}
	var la [1]float32
	if err := l.d.Download(la[:], l.logAlpha); err != nil {
		return st, fmt.Errorf("sacdev: stats: %w", err)
	}
	st.Alpha = float64(float32(math.Exp(float64(la[0]))))
	return st, nil
}

// Close frees the learner's buffers and graph.
func (l *Learner) Close() error {
	var errs []error
	errs = append(errs, l.replay.Free())
	for _, b := range l.all {
		errs = append(errs, l.d.Free(b))
	}
	l.all = nil
	return errors.Join(errs...)
}

// Optim is the learner's optimiser state on the host: the Adam moments of
// the actor and of the critics (critic 1's tensors, then critic 2's, as
// package sac's one critic optimiser orders them) and of log α, the three
// step counts and the update count (which ActorEvery counts).
type Optim struct {
	ActorM, ActorV, CriticM, CriticV [][]float32
	AlphaM, AlphaV                   float32
	ActorT, CriticT, AlphaT, Updates int
}

// optimBufs pairs the moment buffers with o's slices.
func (l *Learner) optimBufs(o *Optim) []struct {
	name string
	bufs []device.Buffer
	vals *[][]float32
} {
	c1, c2 := l.critics[0], l.critics[1]
	return []struct {
		name string
		bufs []device.Buffer
		vals *[][]float32
	}{{"actor m", l.actor.m, &o.ActorM}, {"actor v", l.actor.v, &o.ActorV},
		{"critic m", append(append([]device.Buffer(nil), c1.m...), c2.m...), &o.CriticM},
		{"critic v", append(append([]device.Buffer(nil), c1.v...), c2.v...), &o.CriticV}}
}

// Optim downloads the optimiser state; it waits for the device.
func (l *Learner) Optim() (Optim, error) {
	o := Optim{ActorT: l.actorT, CriticT: l.criticT, AlphaT: l.alphaT, Updates: l.updates}
	for _, x := range l.optimBufs(&o) {
		for _, b := range x.bufs {
			v := make([]float32, b.Len())
			if err := l.d.Download(v, b); err != nil {
				return o, fmt.Errorf("sacdev: optimiser state: %s: %w", x.name, err)
			}
			*x.vals = append(*x.vals, v)
		}
	}
	var m, v [1]float32
	if err := l.d.Download(m[:], l.alphaM); err != nil {
		return o, fmt.Errorf("sacdev: optimiser state: alpha m: %w", err)
	}
	if err := l.d.Download(v[:], l.alphaV); err != nil {
		return o, fmt.Errorf("sacdev: optimiser state: alpha v: %w", err)
	}
	o.AlphaM, o.AlphaV = m[0], v[0]
	return o, nil
}

// SetOptim uploads an optimiser state (e.g. a checkpoint's), checking
// every size.
func (l *Learner) SetOptim(o Optim) error {
	if o.ActorT < 0 || o.CriticT < 0 || o.AlphaT < 0 || o.Updates < 0 {
		return fmt.Errorf("sacdev: set optimiser state: negative counts %d, %d, %d, %d", o.ActorT, o.CriticT, o.AlphaT, o.Updates)
	}
	for _, x := range l.optimBufs(&o) {
		if len(*x.vals) != len(x.bufs) {
			return fmt.Errorf("sacdev: set optimiser state: %s has %d tensors, want %d", x.name, len(*x.vals), len(x.bufs))
		}
		for i, b := range x.bufs {
			if len((*x.vals)[i]) != b.Len() {
				return fmt.Errorf("sacdev: set optimiser state: %s tensor %d has %d values, want %d", x.name, i, len((*x.vals)[i]), b.Len())
			}
			if err := l.d.Upload(b, (*x.vals)[i]); err != nil {
				return fmt.Errorf("sacdev: set optimiser state: %s: %w", x.name, err)
			}
		}
	}
	if err := l.d.Upload(l.alphaM, []float32{o.AlphaM}); err != nil {
		return fmt.Errorf("sacdev: set optimiser state: alpha m: %w", err)
	}
	if err := l.d.Upload(l.alphaV, []float32{o.AlphaV}); err != nil {
		return fmt.Errorf("sacdev: set optimiser state: alpha v: %w", err)
	}
	l.actorT, l.criticT, l.alphaT, l.updates = o.ActorT, o.CriticT, o.AlphaT, o.Updates
	return nil
}

// ActorWeights downloads the actor's weights into dst (W0, B0, W1, ...,
// each of its tensor's size); it waits for the device.
func (l *Learner) ActorWeights(dst [][]float32) error {
	ps := l.actor.params
	if len(dst) != len(ps) {
		return fmt.Errorf("sacdev: actor weights: %d tensors, want %d", len(dst), len(ps))
	}
	for i, p := range ps {
		if len(dst[i]) != p.Len() {
			return fmt.Errorf("sacdev: actor weights: tensor %d has %d values, want %d", i, len(dst[i]), p.Len())
		}
		if err := l.d.Download(dst[i], p); err != nil {
			return fmt.Errorf("sacdev: actor weights: %w", err)
		}
	}
	return nil
}
