package sac

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/models"
)

// Config holds Soft Actor-Critic's hyper-parameters. Online and offline run
// configs convert their own keys into it (their config.json keys stay as
// they were).
type Config struct {
	Hidden        []int   // hidden layer sizes of actor and critics (256, 256)
	Gamma         float64 // discount (0.99)
	Tau           float64 // Polyak rate of the target critics (0.005)
	ActorLR       float64 // 3e-4 (ADMPO-OFF: 1e-4)
	CriticLR      float64 // 3e-4
	AlphaLR       float64 // 3e-4 (ADMPO-OFF: 1e-4)
	BatchSize     int     // 256
	InitAlpha     float64 // entropy coefficient at start (0.2)
	AutoAlpha     bool    // tune α towards TargetEntropy; else α stays InitAlpha
	TargetEntropy float64 // usually -ActDim
	// ActorLRDecayUpdates, when > 0, decays the actor's learning rate along a
	// cosine from ActorLR to 0 over that many updates (PyTorch's
	// CosineAnnealingLR with eta_min 0), as ADMPO-OFF does.
	ActorLRDecayUpdates int
	// ActorLRDecayEvery, when > 1, holds the cosine's learning rate for
	// blocks of that many updates (the authors step PyTorch's scheduler once
	// per epoch): the rate at update u is the cosine at floor(u/E)·E.
	ActorLRDecayEvery int
	// ActorEvery updates the actor and α once every ActorEvery critic
	// updates (the authors' actor_freq; 0 or 1: every update). The target
	// critics follow every update.
	ActorEvery int
	Seed       int64 // initialisation and noise
}

// DefaultConfig returns the paper's SAC settings for an action dimension.
func DefaultConfig(actDim int) Config {
	return Config{Hidden: []int{256, 256}, Gamma: 0.99, Tau: 0.005,
		ActorLR: 3e-4, CriticLR: 3e-4, AlphaLR: 3e-4, BatchSize: 256,
		InitAlpha: 0.2, AutoAlpha: true, TargetEntropy: -float64(actDim), Seed: 1}
}

// Stats reports one update.
type Stats struct {
	CriticLoss float64 // mean((Q1-y)²) + mean((Q2-y)²)
	ActorLoss  float64 // mean(α·logπ - min(Q1,Q2))
	AlphaLoss  float64 // -mean(log α · (logπ + target entropy)); 0 without tuning
	Alpha      float64 // α after the update
	Q1, Q2     float64 // mean Q-values on the batch
	LogPi      float64 // mean log-density of the actor's samples
	ActorLR    float64 // the actor learning rate used
	// ActorUpdated is false for an update that skipped the actor and α
	// (ActorEvery > 1); ActorLoss, AlphaLoss, LogPi and ActorLR are then
	// those of the last update that stepped them (Agent.LastStats).
	ActorUpdated bool
}

// Agent is Soft Actor-Critic (Haarnoja et al. 2018) with twin critics, Polyak
// target critics and automatic entropy tuning, in the style of CleanRL. One
// Update:
//
//	y      = r + γ(1-d)·(min(Q1'(s',a'), Q2'(s',a')) - α·logπ(a'|s')),  a' ~ π(·|s')
//	critic ← Adam on mean((Q1(s,a)-y)²) + mean((Q2(s,a)-y)²)
//	actor  ← Adam on mean(α·logπ(ã|s) - min(Q1(s,ã), Q2(s,ã))),  ã ~ π(·|s)
//	log α  ← Adam on -mean(log α·(logπ(ã|s) + H_target))  (logπ from the actor step)
//	Q'     ← τ·Q + (1-τ)·Q'
//
// The actor step uses the critics just updated; α is the value from before
// the update in all three losses.
//
// With a Learner (SetLearner) the updates run there: the exported fields
// are then current only after Sync (the actor also after Act, ActBatch or
// HostActor), and the losses are read back only when LastStats asks.
type Agent struct {
	Cfg              Config
	Actor            *models.Actor
	Critic1, Critic2 *models.Critic
	Target1, Target2 *models.Critic
	LogAlpha         []float32 // one value; a slice so Adam can update it
	ActorOpt         *models.Adam
	CriticOpt        *models.Adam
	AlphaOpt         *models.Adam
	Updates          int // updates done

	rng       *rand.Rand
	targetG   *models.SACTargetGraph
	criticG   *models.SACCriticGraph
	actorG    *models.SACActorGraph
	actG      *models.ActorSampleGraph // batch 1, for Act
	batchActG *models.ActorSampleGraph // batch BatchSize, for ActBatch
	y         []float32
	alphaGrad [][]float32

	// learner, when set, runs the updates (SetLearner); actorStale and
	// stateStale say that it changed the actor, or anything, since the
	// host's last copy.
	learner                Learner
	actorStale, stateStale bool

	// last is the last update's Stats (LastStats), current unless
	// statsUnread: a learner's update since, not read back yet. lastActor
	// says whether that update stepped the actor, lastActorLR is the
	// actor's rate at the last actor step on a learner, and learnerActed
	// that the learner made one.
	last                    Stats
	statsUnread             bool
	lastActor, learnerActed bool
	lastActorLR             float64
}

// New builds a SAC agent for observations of obsDim values and actions in
// [low, high].
func New(obsDim int, low, high []float64, cfg Config) (*Agent, error) {
	if obsDim <= 0 || len(low) == 0 || len(low) != len(high) || cfg.BatchSize <= 0 || len(cfg.Hidden) == 0 {
		return nil, fmt.Errorf("sac: invalid sizes obs %d, bounds %d/%d, batch %d, hidden %v",
			obsDim, len(low), len(high), cfg.BatchSize, cfg.Hidden)
	}
	if cfg.InitAlpha <= 0 {
		return nil, fmt.Errorf("sac: initial alpha %v must be positive", cfg.InitAlpha)
	}
	actDim := len(low)
	rng := rand.New(rand.NewSource(cfg.Seed))
	s := &Agent{Cfg: cfg, rng: rng,
		Actor:    models.NewActor(obsDim, low, high, cfg.Hidden, rng),
		Critic1:  models.NewCritic(obsDim, actDim, cfg.Hidden, rng),
		Critic2:  models.NewCritic(obsDim, actDim, cfg.Hidden, rng),
		LogAlpha: []float32{float32(math.Log(cfg.InitAlpha))},
	}
	s.Target1, s.Target2 = cloneCritic(s.Critic1), cloneCritic(s.Critic2)
	if err := s.build(); err != nil {
		return nil, err
	}
	return s, nil
}

// build makes the graphs and optimisers over the current weight structs.
func (s *Agent) build() error {
	b := s.Cfg.BatchSize
	var err error
	if s.targetG, err = models.NewSACTargetGraph(s.Actor, s.Target1, s.Target2, b); err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	if s.criticG, err = models.NewSACCriticGraph(s.Critic1, s.Critic2, b); err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	if s.actorG, err = models.NewSACActorGraph(s.Actor, s.Critic1, s.Critic2, b); err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	if s.actG, err = models.NewActorSampleGraph(s.Actor, 1); err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	if s.batchActG, err = models.NewActorSampleGraph(s.Actor, b); err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	s.ActorOpt = models.NewAdam(s.actorG.Params, float32(s.Cfg.ActorLR))
	s.CriticOpt = models.NewAdam(s.criticG.Params, float32(s.Cfg.CriticLR))
	s.AlphaOpt = models.NewAdamSlices([][]float32{s.LogAlpha}, float32(s.Cfg.AlphaLR))
	s.ActorOpt.LR, s.CriticOpt.LR, s.AlphaOpt.LR = s.Cfg.ActorLR, s.Cfg.CriticLR, s.Cfg.AlphaLR
	s.y = make([]float32, b)
	s.alphaGrad = [][]float32{{0}}
	return nil
}

// Close releases the graphs' machines.
func (s *Agent) Close() error {
	for _, c := range []interface{ Close() error }{s.targetG, s.criticG, s.actorG, s.actG, s.batchActG} {
		if err := c.Close(); err != nil {
			return fmt.Errorf("sac: close: %w", err)
		}
	}
	return nil
}

// SetRand makes the agent draw its update noise with rng (a run restored
// from a checkpoint gives it a view of its restored random source).
func (s *Agent) SetRand(rng *rand.Rand) { s.rng = rng }

// Alpha is the current entropy coefficient.
func (s *Agent) Alpha() float32 { return float32(math.Exp(float64(s.LogAlpha[0]))) }

// Update does one SAC update on a batch of Cfg.BatchSize transitions and
// tells whether it stepped the actor and α (ActorEvery's schedule); its
// losses are LastStats.
func (s *Agent) Update(b *buffer.Batch) (actorUpdated bool, err error) {
	epsNext, eps := s.targetG.Eps.Data, s.actorG.Eps.Data
	fillNormal(epsNext, s.rng)
	fillNormal(eps, s.rng)
	if s.learner != nil {
		return s.learnerUpdate(b, epsNext, eps)
	}
	st, err := s.update(b)
	if err != nil {
		return false, err
	}
	if !st.ActorUpdated {
		st = s.withLastActorStep(st)
	}
	s.last, s.statsUnread, s.lastActor = st, false, st.ActorUpdated
	return st.ActorUpdated, nil
}

// update runs an update with the noise already in the graphs' Eps inputs.
func (s *Agent) update(b *buffer.Batch) (Stats, error) {
	var st Stats
	if b.N != s.Cfg.BatchSize || b.ObsDim != s.Actor.ObsDim || b.ActDim != s.Actor.ActDim {
		return st, fmt.Errorf("sac: batch of %d×%d/%d, want %d×%d/%d", b.N, b.ObsDim, b.ActDim,
			s.Cfg.BatchSize, s.Actor.ObsDim, s.Actor.ActDim)
	}
	alpha := s.Alpha()
	if err := s.computeTarget(b, alpha); err != nil {
		return st, err
	}
	if err := s.updateCritic(b, &st); err != nil {
		return st, err
	}
	if s.actorDue() {
		logp, err := s.updateActor(b, alpha, &st)
		if err != nil {
			return st, err
		}
		if err := s.updateAlpha(logp, &st); err != nil {
			return st, err
		}
		st.ActorUpdated = true
	}
	s.updateTargets()
	s.Updates++
	st.Alpha = float64(s.Alpha())
	return st, nil
}

// computeTarget fills s.y with r + γ(1-d)(min Q'(s',a') - α logπ(a'|s')).
func (s *Agent) computeTarget(b *buffer.Batch, alpha float32) error {
	copy(s.targetG.NextObs.Data, b.NextObs)
	logp, q1, q2, err := s.targetG.Run()
	if err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	gamma := float32(s.Cfg.Gamma)
	for i := range s.y {
		v := min(q1[i], q2[i]) - alpha*logp[i]
		s.y[i] = b.Rew[i] + gamma*(1-b.Terminal[i])*v
	}
	return nil
}

func (s *Agent) updateCritic(b *buffer.Batch, st *Stats) error {
	copy(s.criticG.Obs.Data, b.Obs)
	copy(s.criticG.Act.Data, b.Act)
	copy(s.criticG.Target.Data, s.y)
	loss, q1, q2, err := s.criticG.Run()
	if err != nil {
		return fmt.Errorf("sac: %w", err)
	}
	st.CriticLoss, st.Q1, st.Q2 = float64(loss), mean32(q1), mean32(q2)
	if err := s.CriticOpt.Step(); err != nil {
		return fmt.Errorf("sac: critic step: %w", err)
	}
	return nil
}

// actorDue tells whether this update (the (Updates+1)-th critic update)
// also updates the actor and α: the authors count critic updates and update
// the actor when the count is a multiple of actor_freq.
func (s *Agent) actorDue() bool {
	return s.Cfg.ActorEvery <= 1 || (s.Updates+1)%s.Cfg.ActorEvery == 0
}

// ActorLRAt is the actor's learning rate at update u: ActorLR, or its cosine
// decay to 0 over ActorLRDecayUpdates, held constant over blocks of
// ActorLRDecayEvery updates.
func (c Config) ActorLRAt(u int) float64 {
	n := c.ActorLRDecayUpdates
	if n <= 0 {
		return c.ActorLR
	}
	if e := c.ActorLRDecayEvery; e > 1 {
		u = u / e * e
	}
	t := math.Min(float64(u), float64(n))
	return c.ActorLR * 0.5 * (1 + math.Cos(math.Pi*t/float64(n)))
}

func (s *Agent) updateActor(b *buffer.Batch, alpha float32, st *Stats) ([]float32, error) {
	s.ActorOpt.LR = s.Cfg.ActorLRAt(s.Updates)
	st.ActorLR = s.ActorOpt.LR
	copy(s.actorG.Obs.Data, b.Obs)
	s.actorG.SetAlpha(alpha)
	loss, logp, err := s.actorG.Run()
	if err != nil {
		return nil, fmt.Errorf("sac: %w", err)
	}
	st.ActorLoss, st.LogPi = float64(loss), mean32(logp)
	if err := s.ActorOpt.Step(); err != nil {
		return nil, fmt.Errorf("sac: actor step: %w", err)
	}
	return logp, nil
}

// updateAlpha steps log α on -mean(log α·(logπ + H)), whose gradient is
// -mean(logπ + H).
func (s *Agent) updateAlpha(logp []float32, st *Stats) error {
	if !s.Cfg.AutoAlpha {
		return nil
	}
	m := mean32(logp) + s.Cfg.TargetEntropy
	st.AlphaLoss = -float64(s.LogAlpha[0]) * m
	s.alphaGrad[0][0] = float32(-m)
	if err := s.AlphaOpt.StepGrads(s.alphaGrad); err != nil {
		return fmt.Errorf("sac: alpha step: %w", err)
	}
	return nil
}

// updateTargets moves the target critics towards the critics by Tau.
func (s *Agent) updateTargets() {
	tau := float32(s.Cfg.Tau)
	for _, pair := range [][2]*models.Critic{{s.Critic1, s.Target1}, {s.Critic2, s.Target2}} {
		for l := range pair[0].Net.Layers {
			src, dst := &pair[0].Net.Layers[l], &pair[1].Net.Layers[l]
			cpukern.Polyak(dst.W, src.W, tau)
			cpukern.Polyak(dst.B, src.B, tau)
		}
	}
}

// withLastActorStep returns st with ActorLoss, AlphaLoss, LogPi and
// ActorLR of the last update that stepped the actor (for an update that
// skipped it).
func (s *Agent) withLastActorStep(st Stats) Stats {
	st.ActorLoss, st.AlphaLoss, st.LogPi, st.ActorLR = s.last.ActorLoss, s.last.AlphaLoss, s.last.LogPi, s.last.ActorLR
	return st
}

// Act returns an action for one observation: the mean action when
// deterministic, else a sample drawn with rng.
func (s *Agent) Act(obs []float32, deterministic bool, rng *rand.Rand) ([]float32, error) {
	if err := s.syncActor(); err != nil {
		return nil, err
	}
	if err := s.actG.Obs.Set(obs); err != nil {
		return nil, fmt.Errorf("sac: act: %w", err)
	}
	if deterministic {
		clear(s.actG.Eps.Data)
	} else {
		fillNormal(s.actG.Eps.Data, rng)
	}
	a, _, err := s.actG.Run()
	if err != nil {
		return nil, fmt.Errorf("sac: act: %w", err)
	}
	return append([]float32(nil), a...), nil
}

// ActBatch writes actions for n observations (obs [n·ObsDim]) into dst
// [n·ActDim], in chunks of BatchSize; it is meant for model roll-outs.
func (s *Agent) ActBatch(obs []float32, n int, deterministic bool, rng *rand.Rand, dst []float32) error {
	if err := s.syncActor(); err != nil {
		return err
	}
	od, ad, bs := s.Actor.ObsDim, s.Actor.ActDim, s.Cfg.BatchSize
	if len(obs) != n*od || len(dst) != n*ad {
		return fmt.Errorf("sac: act batch: %d obs values and %d action slots for %d rows", len(obs), len(dst), n)
	}
	g := s.batchActG
	for from := 0; from < n; from += bs {
		rows := min(bs, n-from)
		copy(g.Obs.Data, obs[from*od:(from+rows)*od])
		clear(g.Obs.Data[rows*od:])
		if deterministic {
			clear(g.Eps.Data)
		} else {
			fillNormal(g.Eps.Data[:rows*ad], rng)
		}
		a, _, err := g.Run()
		if err != nil {
			return fmt.Errorf("sac: act batch: %w", err)
		}
		copy(dst[from*ad:(from+rows)*ad], a[:rows*ad])
	}
	return nil
}

func fillNormal(v []float32, rng *rand.Rand) {
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
}

func mean32(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

func cloneCritic(c *models.Critic) *models.Critic {
	out := &models.Critic{ObsDim: c.ObsDim, ActDim: c.ActDim, Net: models.MLP{Activation: c.Net.Activation}}
	for _, l := range c.Net.Layers {
		out.Net.Layers = append(out.Net.Layers, models.Linear{In: l.In, Out: l.Out,
			W: append([]float32(nil), l.W...), B: append([]float32(nil), l.B...)})
	}
	return out
}
