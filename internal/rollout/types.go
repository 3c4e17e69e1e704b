package rollout

import (
	"context"
	"slices"
)

// Start holds the start sequences of a roll-out batch, taken from real data:
// row i has Len[i] states (1..M; the last is the current state) and
// Len[i]-1 actions between them, none crossing an episode end.
type Start struct {
	N, M int
	Len  []int
	Obs  []float32 // [N, M, ObsDim]; row i's states in slots 0..Len[i]-1
	Act  []float32 // [N, M-1, ActDim]; row i's actions in slots 0..Len[i]-2 (nil when M = 1)
}

// Transitions are the roll-out's output, one row per model step taken.
type Transitions struct {
	N                      int
	Obs, Act, Rew, NextObs []float32
	Done                   []bool
	// Uncertainty is U^ADM (or the ensemble's max-std) of each transition,
	// before it is multiplied by the penalty coefficient; zeros when the
	// roll-out computes no uncertainty.
	Uncertainty []float32
	// Step is the roll-out step (0..H-1) that produced the transition.
	Step []int32
	// Back is the backtracking length k the next state was predicted with:
	// from the state k-1 steps before the current one through the last k
	// actions (ADM-Roll's draw); always 1 for the ensemble.
	Back []int32
	// MeanNextObs is each transition's predicted mean next observation
	// [N, ObsDim], before the Gaussian sample that gives NextObs (with MC
	// dropout, the mean under the transition's dropout masks); filled by
	// Rollout only when RollConfig.WantMean, else nil. Consumers that
	// store transitions (buffer.Replay.AddTransitions) ignore it.
	MeanNextObs []float32
}

// RollConfig controls a roll-out.
type RollConfig struct {
	Horizon int     // H: model steps per start sequence
	Penalty float32 // beta: reward -= beta·U; 0 computes no uncertainty unless WantU
	WantU   bool    // compute U even when Penalty is 0
	// Done tells whether a predicted next observation ends the episode
	// (e.g. envs.Task.Done); nil means never.
	Done func(obs []float32) bool
	// DoneSpec, when set, ends a row too: the row ends when its next
	// observation is not finite, or Done, or DoneSpec.Eval says so. A
	// device engine evaluates it on the device; the host engines call it
	// as a Done func (DoneFunc).
	DoneSpec *DoneSpec
	// ChunkRows bounds the rows rolled out together (memory); 0: the
	// engine's default (infer's: 8192, or 32768 for the ADM-Roll engines on
	// the CUDA provider).
	ChunkRows int
	// DeterministicPolicy uses the policy's mean action instead of sampling.
	DeterministicPolicy bool
	// Context, when set, is checked before every chunk of rows: once it is
	// cancelled the roll-out stops and returns its error (so a long
	// roll-out gives way to an interrupt within about a chunk's time).
	Context context.Context
	// WantMean fills Transitions.MeanNextObs with the model's mean next
	// observations; it draws nothing, so the roll-out is otherwise the same.
	WantMean bool
}

// DoneFunc is the termination test of c for observations of od values:
// Done, DoneSpec.Eval (once Validate passes), both (either ends a row; Done
// is called first) or nil (never).
func (c *RollConfig) DoneFunc(od int) (func(obs []float32) bool, error) {
	if c.DoneSpec == nil {
		return c.Done, nil
	}
	if err := c.DoneSpec.Validate(od); err != nil {
		return nil, err
	}
	spec, done := c.DoneSpec, c.Done
	if done == nil {
		return spec.Eval, nil
	}
	return func(obs []float32) bool { return done(obs) || spec.Eval(obs) }, nil
}

// NewTransitions returns an empty Transitions with room for n rows of obs
// of od and actions of ad values (MeanNextObs nil).
func NewTransitions(n, od, ad int) *Transitions {
	return &Transitions{Obs: make([]float32, 0, n*od), Act: make([]float32, 0, n*ad), Rew: make([]float32, 0, n),
		NextObs: make([]float32, 0, n*od), Done: make([]bool, 0, n), Uncertainty: make([]float32, 0, n),
		Step: make([]int32, 0, n), Back: make([]int32, 0, n)}
}

// Grow lengthens t by n rows (for obs of od and actions of ad values),
// counted in t.N, for the caller to fill; MeanNextObs is left to it.
func (t *Transitions) Grow(n, od, ad int) {
	t.N += n
	t.Obs = growBy(t.Obs, n*od)
	t.Act = growBy(t.Act, n*ad)
	t.Rew = growBy(t.Rew, n)
	t.NextObs = growBy(t.NextObs, n*od)
	t.Done = growBy(t.Done, n)
	t.Uncertainty = growBy(t.Uncertainty, n)
	t.Step = growBy(t.Step, n)
	t.Back = growBy(t.Back, n)
}

// growBy lengthens s by n elements: zeros, or what its spare capacity held.
func growBy[T any](s []T, n int) []T { return slices.Grow(s, n)[:len(s)+n] }
