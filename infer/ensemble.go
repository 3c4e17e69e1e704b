package infer

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"

	"github.com/admpo/admpo/internal/scratch"
	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// Ensemble rolls out MBPO/MOPO's probabilistic ensemble (the exported
// "ensemble" graph): every transition uses one elite member drawn uniformly
// per row, and the uncertainty is MOPO's max over members of the norm of the
// predicted standard deviation (reward included).
type Ensemble struct {
	sess                 *Session
	obsDim, act, members int
	elites               []int
	obs, a, mean, lv     []float32
}

// OpenEnsemble loads an ensemble exported by onnx.ExportEnsemble.
func OpenEnsemble(model []byte, opts Options) (*Ensemble, error) {
	sig := schema.Ensemble()
	s, err := Open(model, sig.Inputs, sig.Outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (opening the ensemble)", err)
	}
	e := &Ensemble{sess: s}
	od, err1 := MetaInt(s.meta, schema.MetaObsDim)
	ad, err2 := MetaInt(s.meta, schema.MetaActDim)
	mem, err3 := MetaInt(s.meta, schema.MetaMembers)
	if err1 != nil || err2 != nil || err3 != nil {
		s.Close()
		return nil, fmt.Errorf("infer: ensemble metadata: %v %v %v", err1, err2, err3)
	}
	e.obsDim, e.act, e.members = od, ad, mem
	for _, f := range strings.Split(s.meta[schema.MetaElites], ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= mem {
			s.Close()
			return nil, fmt.Errorf("infer: ensemble metadata: bad elites %q", s.meta[schema.MetaElites])
		}
		e.elites = append(e.elites, i)
	}
	return e, nil
}

// Rollout runs the ensemble from the start sequences; only each row's
// current (last) state is used, so start may have any M (the ADM engines'
// start batches can be shared).
func (e *Ensemble) Rollout(p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error) {
	one, err := lastStates(start, e.obsDim, e.act)
	if err != nil {
		return nil, err
	}
	return runRollout(e, p, one, cfg, rng)
}

// lastStates checks a start batch of window M > 1 and reduces it to M = 1:
// each row's current state. Other batches are returned as they are (the
// roll-out checks them).
func lastStates(s *Start, od, ad int) (*Start, error) {
	if s == nil || s.M <= 1 {
		return s, nil
	}
	if err := checkStart(s, s.M, od, ad); err != nil {
		return nil, err
	}
	one := &Start{N: s.N, M: 1, Len: make([]int, s.N), Obs: make([]float32, s.N*od)}
	for i, l := range s.Len {
		one.Len[i] = 1
		copy(one.Obs[i*od:(i+1)*od], s.Obs[(i*s.M+l-1)*od:])
	}
	return one, nil
}

// Close frees the session.
func (e *Ensemble) Close() { e.sess.Close() }

func (e *Ensemble) dims() (int, int, int) { return 1, e.obsDim, e.act }

// begin keeps only the current state: the ensemble is a one-step model.
func (e *Ensemble) begin(w *window.Window) error { return nil }

func (e *Ensemble) advance(w *window.Window, alive []int, cont []bool) {}

func (e *Ensemble) predict(w *window.Window, alive []int, wantU bool, rng *rand.Rand, p *prediction) error {
	n, od, ad, d := len(alive), e.obsDim, e.act, e.obsDim+1
	e.obs = scratch.Resize(e.obs, n*od)
	e.a = scratch.Resize(e.a, n*ad)
	for q, r := range alive {
		copy(e.obs[q*od:], w.Current(r))
		copy(e.a[q*ad:], w.Action(r, w.Len[r]-1))
	}
	e.mean = scratch.Resize(e.mean, e.members*n*d)
	e.lv = scratch.Resize(e.lv, e.members*n*d)
	var ts tensors
	defer ts.destroy()
	vals, err := wrapAll(&ts, make([]ort.Value, 0, 4), f32Buf{e.obs, []int{n, od}}, f32Buf{e.a, []int{n, ad}},
		f32Buf{e.mean, []int{e.members, n, d}}, f32Buf{e.lv, []int{e.members, n, d}})
	if err != nil {
		return err
	}
	if err := e.sess.Run(vals[:2], vals[2:]); err != nil {
		return err
	}
	p.next = scratch.Resize(p.next, n*od)
	p.rew = scratch.Resize(p.rew, n)
	p.lv = scratch.Resize(p.lv, n*d)
	if wantU {
		p.u = scratch.Resize(p.u, n)
	}
	for q := range alive {
		mem := e.elites[rng.Intn(len(e.elites))]
		o := (mem*n + q) * d
		for j := 0; j < od; j++ {
			p.next[q*od+j] = e.obs[q*od+j] + e.mean[o+j]
		}
		p.rew[q] = e.mean[o+od]
		copy(p.lv[q*d:(q+1)*d], e.lv[o:o+d])
		if wantU {
			var worst float64
			for k := 0; k < e.members; k++ {
				var s float64
				for _, v := range e.lv[(k*n+q)*d : (k*n+q+1)*d] {
					s += math.Exp(float64(v)) // std² = exp(logvar)
				}
				worst = math.Max(worst, math.Sqrt(s))
			}
			p.u[q] = float32(worst)
		}
	}
	return nil
}
