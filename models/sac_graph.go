package models

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/models/ops"
)

// This file builds SAC's Gorgonia graphs: the tanh-squashed Gaussian actor,
// the Q-networks, and three fixed-batch programs that sac.Agent runs every
// update (target values, critic step, actor step) plus a forward-only actor
// for acting. Every graph is built once; its inputs are nodes backed by
// slices (GraphInput) that callers overwrite before each run.

// GraphInput is a float32 input node together with its backing slice.
type GraphInput struct {
	Node *G.Node
	Data []float32
}

// NewGraphInput adds a float32 tensor input of the given shape to g.
func NewGraphInput(g *G.ExprGraph, name string, shape ...int) GraphInput {
	size := 1
	for _, s := range shape {
		size *= s
	}
	data := make([]float32, size)
	n := G.NewTensor(g, G.Float32, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))))
	return GraphInput{Node: n, Data: data}
}

// Set copies v into the input's backing slice.
func (in GraphInput) Set(v []float32) error {
	if len(v) != len(in.Data) {
		return fmt.Errorf("models: input %s takes %d values, got %d", in.Node.Name(), len(in.Data), len(v))
	}
	copy(in.Data, v)
	return nil
}

func sacConst(v float64) *G.Node { return G.NewConstant(float32(v)) }

// recoverGraph, deferred by the graph builders, turns a panic inside
// Gorgonia (which panics on some shape errors instead of returning them)
// into an error in *err and clears *out; what names the graph.
func recoverGraph[T any](what string, out *T, err *error) {
	if r := recover(); r != nil {
		var zero T
		*out, *err = zero, graphPanic(what, r)
	}
}

// graphPanic turns a panic recovered while building a graph into an error:
// Gorgonia panics on some shape and type errors (e.g. in G.NewTensor,
// G.ApplyOp and G.NewTapeMachine) instead of returning them.
func graphPanic(what string, r any) error {
	return fmt.Errorf("models: %s: graph construction panicked: %v", what, r)
}

// ActorNodes are an Actor's graph nodes.
type ActorNodes struct {
	Net   MLPNodes
	actor *Actor
	name  string
}

// NewActorNodes adds a's network to g (nodes named name+".net.<i>.W|B").
func NewActorNodes(g *G.ExprGraph, name string, a *Actor) ActorNodes {
	return ActorNodes{Net: NewMLPNodes(g, name+".net", &a.Net), actor: a, name: name}
}

// Params returns the actor network's weights.
func (a ActorNodes) Params() G.Nodes { return a.Net.Params() }

// Sample returns the actions [batch, ActDim] and their log-densities [batch]
// for observations obs [batch, ObsDim] and standard normal noise eps
// [batch, ActDim] (the reparameterisation trick; eps = 0 gives the
// deterministic action Scale ⊙ tanh(u) + Bias). With the network output split
// into the mean u and raw log-std t,
//
//	logstd = LogStdMin + (LogStdMax-LogStdMin)/2·(tanh(t)+1)
//	x      = u + exp(logstd) ⊙ eps
//	action = Scale ⊙ tanh(x) + Bias
//	logp   = Σ_j [ -eps_j²/2 - logstd_j - log(2π)/2 - log(1 - tanh(x_j)²) ]
//
// with log(1 - tanh(x)²) = 2·(log 2 - x - softplus(-2x)) for stability. The
// log-density is that of the squashed action tanh(x) in [-1,1]^ActDim: it
// leaves out the constant log|Scale| term, so target entropies keep their
// usual meaning whatever the action bounds. The head after the network is one
// fused op (ops.SquashedGaussian).
func (a ActorNodes) Sample(obs, eps *G.Node) (action, logProb *G.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			action, logProb, err = nil, nil, graphPanic("actor "+a.name+": sample", r)
		}
	}()
	wrap := func(e error) error { return fmt.Errorf("models: actor %s: sample: %w", a.name, e) }
	act := a.actor
	if obs.Dims() != 2 || eps.Dims() != 2 || eps.Shape()[0] != obs.Shape()[0] || eps.Shape()[1] != act.ActDim {
		return nil, nil, wrap(fmt.Errorf("obs %v and eps %v do not fit [batch,%d] and [batch,%d]", obs.Shape(), eps.Shape(), act.ObsDim, act.ActDim))
	}
	out, err := a.Net.Apply(obs)
	if err != nil {
		return nil, nil, wrap(err)
	}
	action, logProb, err = ops.SquashedGaussian(out, eps, ops.Squash{LogStdMin: float64(act.LogStdMin),
		LogStdMax: float64(act.LogStdMax), Scale: act.Scale, Bias: act.Bias})
	if err != nil {
		return nil, nil, wrap(err)
	}
	return action, logProb, nil
}

// CriticNodes are a Critic's graph nodes.
type CriticNodes struct {
	Net  MLPNodes
	name string
}

// NewCriticNodes adds c's network to g (nodes named name+".net.<i>.W|B").
func NewCriticNodes(g *G.ExprGraph, name string, c *Critic) CriticNodes {
	return CriticNodes{Net: NewMLPNodes(g, name+".net", &c.Net), name: name}
}

// Params returns the critic network's weights.
func (c CriticNodes) Params() G.Nodes { return c.Net.Params() }

// Q returns Q(obs, act) of shape [batch] for obs [batch, ObsDim] and act
// [batch, ActDim].
func (c CriticNodes) Q(obs, act *G.Node) (q *G.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			q, err = nil, graphPanic("critic "+c.name, r)
		}
	}()
	in, err := ops.ConcatColumns(obs, act)
	if err != nil {
		return nil, fmt.Errorf("models: critic %s: %w", c.name, err)
	}
	q, err = c.Net.Apply(in)
	if err != nil {
		return nil, fmt.Errorf("models: critic %s: %w", c.name, err)
	}
	q, err = G.Reshape(q, tensor.Shape{obs.Shape()[0]})
	if err != nil {
		return nil, fmt.Errorf("models: critic %s: %w", c.name, err)
	}
	return q, nil
}

// sacProgram is a compiled graph that is reset before each run.
type sacProgram struct {
	g *G.ExprGraph
	m G.VM
}

// newSACGraph rejects empty batches and dimensions before any graph is
// built and returns an empty graph, making sure Gorgonia multiplies through
// OpenBLAS.
func newSACGraph(obsDim, actDim, batch int) (*G.ExprGraph, error) {
	if obsDim <= 0 || actDim <= 0 || batch <= 0 {
		return nil, fmt.Errorf("models: sac graph: invalid sizes obs %d, act %d, batch %d", obsDim, actDim, batch)
	}
	blas.Use()
	return G.NewGraph(), nil
}

// compile adds the gradients of loss with respect to params to the graph
// and compiles it; what names the gradients in errors.
func (p *sacProgram) compile(loss *G.Node, params G.Nodes, what string) error {
	if _, err := G.Grad(loss, params...); err != nil {
		return fmt.Errorf("models: %s: %w", what, err)
	}
	p.m = G.NewTapeMachine(p.g)
	return nil
}

func (p *sacProgram) run() error {
	p.m.Reset()
	if err := p.m.RunAll(); err != nil {
		return err
	}
	return nil
}

// Close releases the machine.
func (p *sacProgram) Close() error { return p.m.Close() }

func sacValues(n *G.Node) []float32 { return n.Value().Data().([]float32) }

// SACTargetGraph computes, for next observations and noise, the inputs of
// SAC's critic target: the sampled next actions' log-densities and both
// target critics' values.
type SACTargetGraph struct {
	sacProgram
	NextObs, Eps GraphInput
	logp, q1, q2 *G.Node
}

// NewSACTargetGraph builds the target graph for batches of the given size,
// reading actor and the two target critics' weights in place.
func NewSACTargetGraph(actor *Actor, target1, target2 *Critic, batch int) (t *SACTargetGraph, err error) {
	defer recoverGraph("sac target graph", &t, &err)
	g, err := newSACGraph(actor.ObsDim, actor.ActDim, batch)
	if err != nil {
		return nil, err
	}
	t = &SACTargetGraph{sacProgram: sacProgram{g: g},
		NextObs: NewGraphInput(g, "next_obs", batch, actor.ObsDim),
		Eps:     NewGraphInput(g, "eps", batch, actor.ActDim)}
	a, logp, err := NewActorNodes(g, "actor", actor).Sample(t.NextObs.Node, t.Eps.Node)
	if err != nil {
		return nil, err
	}
	if t.q1, err = NewCriticNodes(g, "target1", target1).Q(t.NextObs.Node, a); err != nil {
		return nil, err
	}
	if t.q2, err = NewCriticNodes(g, "target2", target2).Q(t.NextObs.Node, a); err != nil {
		return nil, err
	}
	t.logp = logp
	t.m = G.NewTapeMachine(g)
	return t, nil
}

// Run evaluates the graph and returns views of the log-densities and the two
// target Q-values, each [batch]; they stay valid until the next Run.
func (t *SACTargetGraph) Run() (logp, q1, q2 []float32, err error) {
	if err := t.run(); err != nil {
		return nil, nil, nil, fmt.Errorf("models: sac target graph: %w", err)
	}
	return sacValues(t.logp), sacValues(t.q1), sacValues(t.q2), nil
}

// SACCriticGraph computes the twin-critic loss
// mean((Q1(s,a) - y)²) + mean((Q2(s,a) - y)²) and its gradients.
type SACCriticGraph struct {
	sacProgram
	Obs, Act, Target GraphInput
	Params           G.Nodes // both critics' weights, critic 1 first
	loss, q1, q2     *G.Node
}

// NewSACCriticGraph builds the critic-loss graph for batches of the given size.
func NewSACCriticGraph(c1, c2 *Critic, batch int) (c *SACCriticGraph, err error) {
	defer recoverGraph("sac critic graph", &c, &err)
	g, err := newSACGraph(c1.ObsDim, c1.ActDim, batch)
	if err != nil {
		return nil, err
	}
	c = &SACCriticGraph{sacProgram: sacProgram{g: g},
		Obs:    NewGraphInput(g, "obs", batch, c1.ObsDim),
		Act:    NewGraphInput(g, "act", batch, c1.ActDim),
		Target: NewGraphInput(g, "target", batch)}
	// The batch is data: the critics' first layers form no input gradient.
	ops.MarkData(c.Obs.Node)
	ops.MarkData(c.Act.Node)
	n1, n2 := NewCriticNodes(g, "critic1", c1), NewCriticNodes(g, "critic2", c2)
	if c.q1, err = n1.Q(c.Obs.Node, c.Act.Node); err != nil {
		return nil, err
	}
	if c.q2, err = n2.Q(c.Obs.Node, c.Act.Node); err != nil {
		return nil, err
	}
	// Sum of the two MSEs as one reduction of the elementwise sum (Gorgonia
	// cannot add float32 scalars). Not G.Concat(0, d1, d2): Gorgonia's
	// gradient of an axis-0 concatenation of two [n] vectors is wrong for
	// n = 256, 512, 1024 (the second part gets the first part's gradient),
	// which trained critic 2 with critic 1's gradient at SAC's batch 256.
	var d1, d2, both *G.Node
	if d1, err = G.Sub(c.q1, c.Target.Node); err == nil {
		if d2, err = G.Sub(c.q2, c.Target.Node); err == nil {
			if d1, err = G.Square(d1); err == nil {
				if d2, err = G.Square(d2); err == nil {
					if both, err = G.Add(d1, d2); err == nil {
						if both, err = G.Mul(both, sacConst(1/float64(batch))); err == nil {
							c.loss, err = G.Sum(both)
						}
					}
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("models: sac critic loss: %w", err)
	}
	// Q1 and Q2 are intermediate: keep copies for the caller.
	if c.q1, err = ops.KeepValue(c.q1); err != nil {
		return nil, err
	}
	if c.q2, err = ops.KeepValue(c.q2); err != nil {
		return nil, err
	}
	c.Params = append(n1.Params(), n2.Params()...)
	if err := c.compile(c.loss, c.Params, "sac critic gradients"); err != nil {
		return nil, err
	}
	return c, nil
}

// Run evaluates the loss and the gradients of Params; it returns the loss and
// views of Q1 and Q2 [batch].
func (c *SACCriticGraph) Run() (loss float32, q1, q2 []float32, err error) {
	if err := c.run(); err != nil {
		return 0, nil, nil, fmt.Errorf("models: sac critic graph: %w", err)
	}
	return c.loss.Value().Data().(float32), sacValues(c.q1), sacValues(c.q2), nil
}

// SACActorGraph computes the actor loss mean(α·logπ(a|s) - min(Q1(s,a), Q2(s,a)))
// with a = the reparameterised sample, and its gradients with respect to the
// actor's weights only.
type SACActorGraph struct {
	sacProgram
	Obs, Eps GraphInput
	Params   G.Nodes // the actor's weights
	alpha    *G.F32  // the entropy coefficient, read at every run
	loss     *G.Node
	logp     *G.Node
}

// NewSACActorGraph builds the actor-loss graph for batches of the given size.
// The critics' weights are read in place but receive no gradients.
func NewSACActorGraph(actor *Actor, c1, c2 *Critic, batch int) (a *SACActorGraph, err error) {
	defer recoverGraph("sac actor graph", &a, &err)
	g, err := newSACGraph(actor.ObsDim, actor.ActDim, batch)
	if err != nil {
		return nil, err
	}
	a = &SACActorGraph{sacProgram: sacProgram{g: g},
		Obs:   NewGraphInput(g, "obs", batch, actor.ObsDim),
		Eps:   NewGraphInput(g, "eps", batch, actor.ActDim),
		alpha: G.NewF32(0)}
	ops.MarkData(a.Obs.Node) // the actor's first layer forms no input gradient
	alphaN := G.NewScalar(g, G.Float32, G.WithName("alpha"), G.WithValue(a.alpha))
	an := NewActorNodes(g, "actor", actor)
	act, logp, err := an.Sample(a.Obs.Node, a.Eps.Node)
	if err != nil {
		return nil, err
	}
	// The critics are read, not trained, here: freeze them so that no
	// gradients are formed for their weights.
	cn1, cn2 := NewCriticNodes(g, "critic1", c1), NewCriticNodes(g, "critic2", c2)
	cn1.Net, cn2.Net = cn1.Net.Frozen(), cn2.Net.Frozen()
	q1, err := cn1.Q(a.Obs.Node, act)
	if err != nil {
		return nil, err
	}
	q2, err := cn2.Q(a.Obs.Node, act)
	if err != nil {
		return nil, err
	}
	var minQ, per *G.Node
	if minQ, err = G.MinBetween(q1, q2); err == nil {
		if per, err = G.Mul(logp, alphaN); err == nil {
			if per, err = G.Sub(per, minQ); err == nil {
				a.loss, err = G.Mean(per)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("models: sac actor loss: %w", err)
	}
	if a.logp, err = ops.KeepValue(logp); err != nil { // logp is intermediate
		return nil, err
	}
	a.Params = an.Params()
	if err := a.compile(a.loss, a.Params, "sac actor gradients"); err != nil {
		return nil, err
	}
	return a, nil
}

// SetAlpha sets the entropy coefficient α used by the next runs.
func (a *SACActorGraph) SetAlpha(alpha float32) { *a.alpha = G.F32(alpha) }

// Run evaluates the loss and the actor's gradients; it returns the loss and a
// view of the sampled actions' log-densities [batch].
func (a *SACActorGraph) Run() (loss float32, logp []float32, err error) {
	if err := a.run(); err != nil {
		return 0, nil, fmt.Errorf("models: sac actor graph: %w", err)
	}
	return a.loss.Value().Data().(float32), sacValues(a.logp), nil
}

// ActorSampleGraph is a forward-only actor for acting: actions for a fixed
// batch of observations and noise.
type ActorSampleGraph struct {
	sacProgram
	Obs, Eps     GraphInput
	action, logp *G.Node
}

// NewActorSampleGraph builds a sampling graph for batches of the given size.
func NewActorSampleGraph(actor *Actor, batch int) (s *ActorSampleGraph, err error) {
	defer recoverGraph("actor sample graph", &s, &err)
	g, err := newSACGraph(actor.ObsDim, actor.ActDim, batch)
	if err != nil {
		return nil, err
	}
	s = &ActorSampleGraph{sacProgram: sacProgram{g: g},
		Obs: NewGraphInput(g, "obs", batch, actor.ObsDim),
		Eps: NewGraphInput(g, "eps", batch, actor.ActDim)}
	if s.action, s.logp, err = NewActorNodes(g, "actor", actor).Sample(s.Obs.Node, s.Eps.Node); err != nil {
		return nil, err
	}
	s.m = G.NewTapeMachine(g)
	return s, nil
}

// Run returns views of the actions [batch, ActDim] and log-densities [batch].
func (s *ActorSampleGraph) Run() (action, logp []float32, err error) {
	if err := s.run(); err != nil {
		return nil, nil, fmt.Errorf("models: actor sample graph: %w", err)
	}
	return sacValues(s.action), sacValues(s.logp), nil
}
