package goruntime

import (
	"errors"
	"fmt"
	"sync"

	"github.com/admpo/admpo/onnx/schema"
)

// ErrClosed is returned by Actor.Act after Close.
var ErrClosed = errors.New("goruntime: actor is closed")

// Actor runs an actor graph (inputs obs and noise, outputs action and
// mean_action: schema.Actor). Its mutex makes it safe for concurrent use;
// Share gives another Actor over the same weights that runs in parallel.
type Actor struct {
	mu   sync.Mutex
	prog *Program
	r    *Runner
	in   [2][]float32 // obs, noise for the call in progress
}

// Output indices of the actor's Program, in schema.Actor's order.
const (
	outAction = iota
	outMeanAction
)

// NewActor compiles an actor graph for obsDim observation and actDim action
// values per row.
func NewActor(model []byte, obsDim, actDim int) (*Actor, error) {
	sig := schema.Actor()
	prog, err := Compile(model, []Input{{sig.Inputs[0], obsDim}, {sig.Inputs[1], actDim}}, sig.Outputs)
	if err != nil {
		return nil, err
	}
	for i, name := range sig.Outputs {
		if w := prog.OutputWidth(i); w != actDim {
			return nil, fmt.Errorf("goruntime: output %q has %d values per row, want act_dim=%d", name, w, actDim)
		}
	}
	return &Actor{prog: prog, r: prog.NewRunner()}, nil
}

// Share returns a new Actor over the same compiled program (the weights are
// not copied) with its own buffers.
func (a *Actor) Share() *Actor {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prog == nil {
		return &Actor{}
	}
	return &Actor{prog: a.prog, r: a.prog.NewRunner()}
}

// Act writes the actions for the len(obs)/obsDim observations into out:
// noise nil gives the deterministic (mean) action, otherwise noise holds
// one standard normal draw per output value.
func (a *Actor) Act(obs, noise, out []float32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prog == nil {
		return ErrClosed
	}
	i := outAction
	if noise == nil {
		i = outMeanAction
	}
	a.in[0], a.in[1] = obs, noise
	err := a.r.Run(i, a.in[:], out)
	a.in[0], a.in[1] = nil, nil // do not keep the caller's slices
	return err
}

// Close releases the actor's program and buffers; Act then returns
// ErrClosed.
func (a *Actor) Close() {
	a.mu.Lock()
	a.prog, a.r = nil, nil
	a.mu.Unlock()
}
