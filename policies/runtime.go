package policies

import (
	"fmt"
	"strings"

	"github.com/admpo/admpo/infer"
)

// Runtime names accepted by Options.Runtime.
const (
	RuntimeORT = "ort" // ONNX Runtime through admpo's infer package
	RuntimeGo  = "go"  // pure Go: onnx-go v0.5.0 decoding into admpo's own float32 kernels (gobackend.go)
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

func newActor(runtime string, model []byte, info *ModelInfo, obsDim, actDim int, opts Options) (actor, error) {
	switch runtime {
	case RuntimeORT:
		p, err := infer.OpenPolicy(model, infer.Options{Provider: opts.Provider, Threads: opts.threads()})
		if err != nil {
			return nil, fmt.Errorf("policies: ONNX Runtime: %w", err)
		}
		if p.ObsDim != obsDim || p.ActDim != actDim {
			p.Close()
			return nil, fmt.Errorf("policies: ONNX Runtime reads obs_dim=%d, act_dim=%d, want %d, %d", p.ObsDim, p.ActDim, obsDim, actDim)
		}
		return ortActor{p}, nil
	case RuntimeGo:
		return newGoActor(model, info, obsDim, actDim)
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
