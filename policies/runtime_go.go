package policies

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/admpo/admpo/onnx/schema"
	"github.com/admpo/admpo/policies/goruntime"
)

// goActor runs the actor on the pure-Go runtime (package goruntime). It
// checks the model's op types and tensor names first, for errors that name
// the bundle's file.
type goActor struct{ a *goruntime.Actor }

func newGoActor(model []byte, info *ModelInfo, obsDim, actDim int) (goActor, error) {
	if bad := goruntime.Unsupported(info.Ops); len(bad) > 0 {
		return goActor{}, fmt.Errorf("policies: the pure-Go runtime cannot run op(s) %s used by %s; use the %q runtime",
			strings.Join(bad, ", "), PolicyFile, RuntimeORT)
	}
	sig := schema.Actor()
	if !slices.Equal(info.Inputs, sig.Inputs) {
		return goActor{}, fmt.Errorf("policies: the pure-Go runtime needs inputs (%s) in that order, the model has %v",
			strings.Join(sig.Inputs, ", "), info.Inputs)
	}
	for _, name := range sig.Outputs {
		if !slices.Contains(info.Outputs, name) {
			return goActor{}, fmt.Errorf("policies: %s lacks the %s outputs", PolicyFile, strings.Join(sig.Outputs, "/"))
		}
	}
	a, err := goruntime.NewActor(model, obsDim, actDim)
	if err != nil {
		return goActor{}, fmt.Errorf("policies: %s: %w", PolicyFile, err)
	}
	return goActor{a}, nil
}

// share returns a new actor over the same compiled program (the weights are
// not copied) with its own buffers.
func (g goActor) share() goActor { return goActor{g.a.Share()} }

func (g goActor) act(obs, noise, out []float32) error {
	err := g.a.Act(obs, noise, out)
	if errors.Is(err, goruntime.ErrClosed) {
		return ErrClosed
	}
	return err
}

func (g goActor) close() { g.a.Close() }
