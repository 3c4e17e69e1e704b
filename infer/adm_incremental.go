package infer

import (
	"fmt"
	"math/rand"

	ort "github.com/yalue/onnxruntime_go"
)

// ADMIncremental is the incremental ADM-Roll engine. It keeps, for every
// state in a row's window, the GRU hidden state after the actions taken
// since that state, so one roll-out step advances each cached plan by a
// single GRU step (the exported "adm_step" graph) instead of re-running
// every plan from its start: m GRU steps per row and step rather than up to
// m(m+1)/2. Same seed, same transitions as ADMDirect (up to float rounding).
type ADMIncremental struct {
	sess              *Session
	m, obsDim, act    int
	layers, hidden    int
	h                 []float32 // [rows, m, layers, hidden]
	prevL             []int     // window length at the last predict
	k                 []int
	pairs             [][2]int // (row, slot) of each batch entry
	hin, hout, obs, a []float32
	next, rew, lv     []float32
}

// OpenADMIncremental loads an ADM step graph exported by onnx.ExportADMStep.
func OpenADMIncremental(model []byte, opts Options) (*ADMIncremental, error) {
	s, err := Open(model, []string{"hidden", "obs", "act"}, []string{"hidden_out", "next_obs_mean", "reward_mean", "logvar"}, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (opening the ADM step graph)", err)
	}
	m, od, ad, err := admDims(s.meta)
	if err == nil {
		var l, h int
		if l, err = metaInt(s.meta, "layers"); err == nil {
			if h, err = metaInt(s.meta, "hidden"); err == nil {
				return &ADMIncremental{sess: s, m: m, obsDim: od, act: ad, layers: l, hidden: h}, nil
			}
		}
	}
	s.Close()
	return nil, fmt.Errorf("infer: ADM step metadata: %w", err)
}

// Rollout runs ADM-Roll from the start sequences.
func (e *ADMIncremental) Rollout(p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error) {
	return rollout(e, p, start, cfg, rng)
}

// Close frees the session.
func (e *ADMIncremental) Close() { e.sess.Close() }

func (e *ADMIncremental) dims() (int, int, int) { return e.m, e.obsDim, e.act }

func (e *ADMIncremental) slot(r, j int) []float32 {
	n := e.layers * e.hidden
	o := (r*e.m + j) * n
	return e.h[o : o+n]
}

// run advances the listed (row, slot) plans by one GRU step with the given
// action source and leaves the head outputs in e.next/e.rew/e.lv.
func (e *ADMIncremental) run(w *window, actOf func(r, j int) []float32) error {
	n := len(e.pairs)
	od, ad, lh := e.obsDim, e.act, e.layers*e.hidden
	e.hin = grow(e.hin, n*lh)
	e.hout = grow(e.hout, n*lh)
	e.obs = grow(e.obs, n*od)
	e.a = grow(e.a, n*ad)
	for i, pr := range e.pairs {
		r, j := pr[0], pr[1]
		src := e.slot(r, j)
		for l := 0; l < e.layers; l++ { // [layers, n, hidden]
			copy(e.hin[(l*n+i)*e.hidden:(l*n+i+1)*e.hidden], src[l*e.hidden:(l+1)*e.hidden])
		}
		copy(e.obs[i*od:], w.state(r, j))
		copy(e.a[i*ad:], actOf(r, j))
	}
	e.next = grow(e.next, n*od)
	e.rew = grow(e.rew, n)
	e.lv = grow(e.lv, n*(od+1))
	var ts tensors
	defer ts.destroy()
	vals := make([]ort.Value, 0, 7)
	for _, x := range []struct {
		d    []float32
		dims []int
	}{
		{e.hin, []int{e.layers, n, e.hidden}}, {e.obs, []int{n, od}}, {e.a, []int{n, ad}},
		{e.hout, []int{e.layers, n, e.hidden}}, {e.next, []int{n, od}}, {e.rew, []int{n, 1}}, {e.lv, []int{n, od + 1}},
	} {
		t, err := wrap(&ts, x.d, x.dims...)
		if err != nil {
			return err
		}
		vals = append(vals, t)
	}
	if err := e.sess.Run(vals[:3], vals[3:]); err != nil {
		return err
	}
	for i, pr := range e.pairs {
		dst := e.slot(pr[0], pr[1])
		for l := 0; l < e.layers; l++ {
			copy(dst[l*e.hidden:(l+1)*e.hidden], e.hout[(l*n+i)*e.hidden:(l*n+i+1)*e.hidden])
		}
	}
	return nil
}

// begin replays each start window's actions so that slot j holds the hidden
// state after the actions from state j up to the current state.
func (e *ADMIncremental) begin(w *window) error {
	rows := len(w.l)
	e.h = grow(e.h, rows*e.m*e.layers*e.hidden)
	clear(e.h)
	e.prevL = make([]int, rows)
	for t := 0; t < e.m-1; t++ {
		e.pairs = e.pairs[:0]
		for r := 0; r < rows; r++ {
			for j := 0; j+t <= w.l[r]-2; j++ {
				e.pairs = append(e.pairs, [2]int{r, j})
			}
		}
		if len(e.pairs) == 0 {
			break
		}
		step := t
		if err := e.run(w, func(r, j int) []float32 { return w.action(r, j+step) }); err != nil {
			return err
		}
	}
	return nil
}

func (e *ADMIncremental) predict(w *window, alive []int, wantU bool, rng *rand.Rand, p *prediction) error {
	e.k = drawK(w, alive, rng, e.k)
	od := e.obsDim
	e.pairs = e.pairs[:0]
	for _, r := range alive {
		e.prevL[r] = w.l[r]
		for j := 0; j < w.l[r]; j++ {
			e.pairs = append(e.pairs, [2]int{r, j})
		}
	}
	if err := e.run(w, func(r, _ int) []float32 { return w.action(r, w.l[r]-1) }); err != nil {
		return err
	}
	na := len(alive)
	p.next = grow(p.next, na*od)
	p.rew = grow(p.rew, na)
	p.lv = grow(p.lv, na*(od+1))
	if wantU {
		p.u = grow(p.u, na)
	}
	i := 0
	for q, r := range alive {
		l := w.l[r]
		c := i + l - e.k[q] // slot l-k holds the k-step plan
		copy(p.next[q*od:(q+1)*od], e.next[c*od:])
		p.rew[q] = e.rew[c]
		copy(p.lv[q*(od+1):(q+1)*(od+1)], e.lv[c*(od+1):])
		if wantU {
			p.u[q] = uADM(e.next[i*od:(i+l)*od], l, od)
		}
		i += l
	}
	return nil
}

// advance mirrors the window's push in the hidden-state cache: a full
// window drops its oldest plan, and the new current state starts from zero.
func (e *ADMIncremental) advance(w *window, alive []int, cont []bool) {
	lh := e.layers * e.hidden
	for q, r := range alive {
		if !cont[q] {
			continue
		}
		row := e.h[r*e.m*lh : (r+1)*e.m*lh]
		if e.prevL[r] == e.m {
			copy(row, row[lh:])
		}
		clear(e.slot(r, w.l[r]-1))
	}
}
