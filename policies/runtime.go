package policies

import (
	"fmt"
	"strings"

	"github.com/admpo/admpo/infer"
)

// Runtime names accepted by Options.Runtime.
const (
	RuntimeORT = "ort" // ONNX Runtime through admpo's infer package
	RuntimeGo  = "go"  // pure Go: package goruntime (onnx-go decoding into admpo's own float32 kernels)
)

// actor runs the policy network on one backend. It is not safe for
// concurrent use: Policy keeps a pool of them.
type actor interface {
	// act writes the actions for the len(obs)/obsDim observations into
	// out; noise nil gives the deterministic (mean) action, otherwise it
	// holds standard normal draws, one per output value.
	act(obs, noise, out []float32) error
	close()
}

// newActors returns n actors for the runtime. The pure-Go ones share one
// compiled program (one copy of the weights); each ONNX Runtime actor is a
// session of its own.
func newActors(runtime string, model []byte, info *ModelInfo, obsDim, actDim, n int, opts Options) ([]actor, error) {
	var out []actor
	fail := func(err error) ([]actor, error) {
		for _, a := range out {
			a.close()
		}
		return nil, err
	}
	switch runtime {
	case RuntimeORT:
		for range n {
			p, err := infer.OpenPolicy(model, infer.Options{Provider: opts.Provider, Threads: opts.threads()})
			if err != nil {
				return fail(fmt.Errorf("policies: ONNX Runtime: %w", err))
			}
			out = append(out, ortActor{p})
			if p.ObsDim != obsDim || p.ActDim != actDim {
				return fail(fmt.Errorf("policies: ONNX Runtime reads obs_dim=%d, act_dim=%d, want %d, %d", p.ObsDim, p.ActDim, obsDim, actDim))
			}
		}
		return out, nil
	case RuntimeGo:
		first, err := newGoActor(model, info, obsDim, actDim)
		if err != nil {
			return nil, err
		}
		out = append(out, first)
		for len(out) < n {
			out = append(out, first.share())
		}
		return out, nil
	}
	return nil, fmt.Errorf("policies: unknown runtime %q (want %q or %q)", runtime, RuntimeORT, RuntimeGo)
}

func normRuntime(r string) string {
	r = strings.ToLower(strings.TrimSpace(r))
	if r == "" {
		return RuntimeORT
	}
	return r
}

// ortActor runs the actor on ONNX Runtime.
type ortActor struct{ p *infer.Policy }

func (a ortActor) act(obs, noise, out []float32) error { return a.p.Act(obs, noise, out) }

func (a ortActor) close() { a.p.Close() }
