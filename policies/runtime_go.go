package policies

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// GoRuntimeOps are the ONNX op types the pure-Go runtime implements: those
// of the actors admpo's onnx package exports (Gemm, Relu or Sigmoid·Mul
// for swish, Tanh, Exp, Mul, Add, Identity) and MatMul. Binary ops
// broadcast a scalar or a row constant over the batch; Gemm and MatMul
// take the batch as A and an initialiser as B.
var GoRuntimeOps = []string{"Add", "Exp", "Gemm", "Identity", "MatMul", "Mul", "Relu", "Sigmoid", "Tanh"}

// UnsupportedGoOps returns the op types of a model that the pure-Go runtime
// cannot run (none for the actors admpo's onnx package exports).
func UnsupportedGoOps(info *ModelInfo) []string {
	var bad []string
	for _, op := range info.Ops {
		if !slices.Contains(GoRuntimeOps, op) {
			bad = append(bad, op)
		}
	}
	return bad
}

// goActor runs the actor on the pure-Go runtime: onnx-go decodes the model
// into admpo's own backend (gobackend.go), compiled once into float32
// kernels over gonum's pure-Go BLAS. Any batch size runs as it is (in
// chunks of goChunk rows), and a batch-1 call allocates nothing once the
// first call has run. The mutex makes an actor safe for concurrent use,
// although Policy never shares one between goroutines.
type goActor struct {
	mu             sync.Mutex
	prog           *goProgram
	s              *goScratch
	iAction, iMean int // plan indices
}

func newGoActor(model []byte, info *ModelInfo, obsDim, actDim int) (*goActor, error) {
	if bad := UnsupportedGoOps(info); len(bad) > 0 {
		return nil, fmt.Errorf("policies: the pure-Go runtime cannot run op(s) %s used by %s; use the %q runtime",
			strings.Join(bad, ", "), PolicyFile, RuntimeORT)
	}
	if len(info.Inputs) != 2 || info.Inputs[0] != "obs" || info.Inputs[1] != "noise" {
		return nil, fmt.Errorf("policies: the pure-Go runtime needs inputs (obs, noise) in that order, the model has %v", info.Inputs)
	}
	if !slices.Contains(info.Outputs, "action") || !slices.Contains(info.Outputs, "mean_action") {
		return nil, fmt.Errorf("policies: %s lacks the action/mean_action outputs", PolicyFile)
	}
	prog, err := compileGoModel(model, []goInput{{"obs", obsDim}, {"noise", actDim}}, []string{"action", "mean_action"})
	if err != nil {
		return nil, fmt.Errorf("policies: %s: %w", PolicyFile, err)
	}
	for _, pl := range prog.plans {
		if w := prog.values[pl.value].width; w != actDim {
			return nil, fmt.Errorf("policies: %s: output %q has %d values per row, want act_dim=%d", PolicyFile, pl.name, w, actDim)
		}
	}
	return &goActor{prog: prog, s: prog.newScratch(), iAction: 0, iMean: 1}, nil
}

// share returns a new actor over the same compiled program (the weights are
// not copied) with its own scratch buffers.
func (a *goActor) share() *goActor {
	return &goActor{prog: a.prog, s: a.prog.newScratch(), iAction: a.iAction, iMean: a.iMean}
}

func (a *goActor) act(obs, noise, out []float32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prog == nil {
		return ErrClosed
	}
	pl := &a.prog.plans[a.iAction]
	if noise == nil {
		pl = &a.prog.plans[a.iMean]
	}
	a.s.in[0], a.s.in[1] = obs, noise
	err := a.prog.run(a.s, pl, out)
	a.s.in[0], a.s.in[1] = nil, nil // do not keep the caller's slices
	return err
}

func (a *goActor) close() {
	a.mu.Lock()
	a.prog, a.s = nil, nil
	a.mu.Unlock()
}
