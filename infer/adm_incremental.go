package infer

import (
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/internal/scratch"
	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// ADMIncremental is the incremental ADM-Roll engine. It keeps, for every
// state in a row's window, the GRU hidden state after the actions taken
// since that state, so one roll-out step advances each cached plan by a
// single GRU step (the exported "adm_step" graph) instead of re-running
// every plan from its start: m GRU steps per row and step rather than up to
// m(m+1)/2. Same seed, same transitions as ADMDirect (up to float rounding).
// A roll-out step is cut into sub-batches of about Options.BatchRows plans
// (whole rows) run by Options.Workers threads.
type ADMIncremental struct {
	sess           *Session
	m, obsDim, act int
	layers, hidden int
	split          split
	h              []float32 // [rows, m, layers, hidden]
	k              []int
	pairs          []pair // the plans advanced by one run
	bnd            []int
	obs, a         []float32 // [plans, obsDim], [plans, act]
	next, rew, lv  []float32
	pos            []int // output row of each pair
	first          []int // each alive row's first pair
	wk             []incWorker
	freshRows      bool // the graph starts rows past hidden's from zero
	drop           dropout
	bound          *incBound // the hidden states in bound buffers (nil: in h)
	bindErr        error     // why Binding auto left the engine unbound
}

// pair is one cached plan: row r's plan starting at window slot j.
type pair struct{ r, j int }

// incWorker is one worker's hidden-state buffers, [layers, piece, hidden],
// and dropout mask [blocks, piece, hidden] (dropout only).
type incWorker struct{ hin, hout, mask []float32 }

// OpenADMIncremental loads an ADM step graph exported by
// onnx.ExportADMStep (or ExportADMStepWith: a graph with dropout rolls out
// with MC dropout, the masks those of ADMDirect; see DropoutKeep).
//
// With Options.Binding (by default on the CUDA provider) the engine keeps
// the GRU hidden states in ONNX Runtime buffers, in device memory with
// CUDA, bound to the step graph's hidden input and output (I/O binding;
// see incBound): only the states and actions Go computes go in and the
// head outputs come back. Same seed, same transitions as unbound.
func OpenADMIncremental(model []byte, opts Options) (*ADMIncremental, error) {
	if err := CheckBinding(opts.Binding); err != nil {
		return nil, err
	}
	s, m, od, ad, err := openADMGraph(model, schema.ADMStep(), opts, "the ADM step graph", "ADM step")
	if err != nil {
		return nil, err
	}
	var l, h int
	if l, err = MetaInt(s.meta, schema.MetaLayers); err == nil {
		if h, err = MetaInt(s.meta, schema.MetaHidden); err == nil {
			d, err := engineDropout(s)
			if err != nil {
				s.Close()
				return nil, err
			}
			sp := engineSplit(opts)
			e := &ADMIncremental{sess: s, m: m, obsDim: od, act: ad, layers: l, hidden: h, split: sp,
				wk: make([]incWorker, sp.workers), freshRows: s.meta[schema.MetaFreshRows] == "true", drop: d}
			if want, must := wantBinding(opts); want {
				if err := e.openBound(opts); err != nil {
					err = fmt.Errorf("infer: ADM step graph on bound buffers (Options.Binding %q): %w", opts.Binding, err)
					if must {
						s.Close()
						return nil, err
					}
					e.bindErr = err
				}
			}
			return e, nil
		}
	}
	s.Close()
	return nil, fmt.Errorf("infer: ADM step metadata: %w", err)
}

// Dropout is the graph's MC dropout probability (0: none).
func (e *ADMIncremental) Dropout() float64 { return e.drop.p }

func (e *ADMIncremental) dropState() *dropout { return &e.drop }

// Rollout runs ADM-Roll from the start sequences.
func (e *ADMIncremental) Rollout(p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error) {
	return runRollout(e, p, start, cfg, rng)
}

// Bound reports whether the engine runs on bound buffers (Options.Binding).
func (e *ADMIncremental) Bound() bool { return e.bound != nil }

// BindingError is why an engine that Options.Binding auto would have bound
// runs unbound (nil when it is bound or was not asked to bind).
func (e *ADMIncremental) BindingError() error { return e.bindErr }

// Close frees the bound buffers and the sessions.
func (e *ADMIncremental) Close() {
	if e.bound != nil {
		e.bound.close()
		e.bound = nil
	}
	e.sess.Close()
}

func (e *ADMIncremental) dims() (int, int, int) { return e.m, e.obsDim, e.act }

func (e *ADMIncremental) rowLoop() func(n int, f func(lo, hi int)) { return e.split.rowLoop() }

func (e *ADMIncremental) chunkRows() int { return e.split.chunkRows() }

func (e *ADMIncremental) slot(r, j int) []float32 {
	n := e.layers * e.hidden
	o := (r*e.m + j) * n
	return e.h[o : o+n]
}

// rowBounds cuts e.pairs into pieces of about split.rows plans that never
// split a row (a row's plans are consecutive), so that no two workers touch
// the same row's cache.
func (e *ADMIncremental) rowBounds() {
	n := len(e.pairs)
	b := e.split.bounds(n, e.bnd)
	for i := 1; i+1 < len(b); i++ { // move each inner boundary to a row start
		c := b[i]
		for c < n && c > 0 && e.pairs[c].r == e.pairs[c-1].r {
			c++
		}
		b[i] = c
	}
	e.bnd = b[:1]
	for _, c := range b[1:] {
		if c > e.bnd[len(e.bnd)-1] {
			e.bnd = append(e.bnd, c)
		}
	}
}

// run advances the plans in e.pairs by one GRU step, the action of pair i
// being actOf(pair), and leaves the head outputs of pair i at row e.pos[i]
// of e.next/e.rew/e.lv. Plans for which fresh is true have taken no action
// yet (zero state); when the graph takes such rows apart (fresh_rows
// metadata) they go last in their piece and skip the recurrent products.
// With shift, a row whose window is full (w.Len = m) stores slot j's new
// state in slot j-1, the shift its window makes when it continues, and the
// slot of the row's next current state is zeroed. With dropout, keyed gives
// each pair the mask of its plan (row, k = w.Len - j); otherwise (outputs
// not used) every unit is kept.
//
// On bound buffers (e.bound) runBound does the same, and carry keeps the
// cached states that the run does not advance (begin).
func (e *ADMIncremental) run(w *window.Window, actOf func(pair) []float32, fresh func(pair) bool, shift, keyed, carry bool) error {
	if e.bound != nil {
		return e.runBound(w, actOf, fresh, shift, keyed, carry)
	}
	n := len(e.pairs)
	od, ad, H, L := e.obsDim, e.act, e.hidden, e.layers
	e.obs = scratch.Resize(e.obs, n*od)
	e.a = scratch.Resize(e.a, n*ad)
	e.next = scratch.Resize(e.next, n*od)
	e.rew = scratch.Resize(e.rew, n)
	e.lv = scratch.Resize(e.lv, n*(od+1))
	e.pos = scratch.Resize(e.pos, n)
	e.rowBounds()
	return e.split.each(e.bnd, func(wi, lo, hi int) error {
		pn := hi - lo
		nf := 0
		if e.freshRows {
			for i := lo; i < hi; i++ {
				if fresh(e.pairs[i]) {
					nf++
				}
			}
		}
		n0 := pn - nf
		wk := &e.wk[wi]
		wk.hin = scratch.Resize(wk.hin, L*n0*H)
		wk.hout = scratch.Resize(wk.hout, L*pn*H)
		drop := e.drop.on()
		if drop {
			wk.mask = scratch.Resize(wk.mask, e.drop.blocks*pn*e.drop.hidden)
		}
		c, f := 0, n0
		for i := lo; i < hi; i++ {
			pr := e.pairs[i]
			var q int // position in the piece
			if nf > 0 && fresh(pr) {
				q, f = f, f+1
			} else {
				q, c = c, c+1
				src := e.slot(pr.r, pr.j)
				for l := 0; l < L; l++ { // [layers, n0, hidden]
					copy(wk.hin[(l*n0+q)*H:(l*n0+q+1)*H], src[l*H:(l+1)*H])
				}
			}
			e.pos[i] = lo + q
			copy(e.obs[(lo+q)*od:], w.State(pr.r, pr.j))
			copy(e.a[(lo+q)*ad:], actOf(pr))
			switch {
			case drop && keyed:
				e.drop.fill(wk.mask, pn, q, pr.r, w.Len[pr.r]-pr.j)
			case drop:
				e.drop.ones(wk.mask, pn, q)
			}
		}
		var ts tensors
		defer ts.destroy()
		vals, err := wrapAll(&ts, make([]ort.Value, 0, 8),
			f32Buf{wk.hin, []int{L, n0, H}}, f32Buf{e.obs[lo*od : hi*od], []int{pn, od}},
			f32Buf{e.a[lo*ad : hi*ad], []int{pn, ad}}, f32Buf{wk.hout, []int{L, pn, H}},
			f32Buf{e.next[lo*od : hi*od], []int{pn, od}}, f32Buf{e.rew[lo:hi], []int{pn, 1}},
			f32Buf{e.lv[lo*(od+1) : hi*(od+1)], []int{pn, od + 1}})
		if err != nil {
			return err
		}
		nin := 3
		if drop { // the mask input goes after hidden, obs and act
			t, err := wrap(&ts, wk.mask, e.drop.blocks, pn, e.drop.hidden)
			if err != nil {
				return err
			}
			vals = append(vals[:3], append([]ort.Value{t}, vals[3:]...)...)
			nin = 4
		}
		if err := e.sess.Run(vals[:nin], vals[nin:]); err != nil {
			return err
		}
		for i := lo; i < hi; i++ {
			pr := e.pairs[i]
			j := pr.j
			if shift && w.Len[pr.r] == e.m {
				if j == 0 { // the oldest plan leaves the window
					continue
				}
				j--
			}
			dst := e.slot(pr.r, j)
			q := e.pos[i] - lo
			for l := 0; l < L; l++ {
				copy(dst[l*H:(l+1)*H], wk.hout[(l*pn+q)*H:(l*pn+q+1)*H])
			}
		}
		if shift {
			for i := lo; i < hi; i++ {
				if r := e.pairs[i].r; i+1 == hi || e.pairs[i+1].r != r {
					clear(e.slot(r, min(w.Len[r], e.m-1)))
				}
			}
		}
		return nil
	})
}

// begin replays each start window's actions so that slot j holds the hidden
// state after the actions from state j up to the current state.
func (e *ADMIncremental) begin(w *window.Window) error {
	rows := len(w.Len)
	if e.bound != nil {
		e.bound.reset(rows * e.m)
	} else {
		e.h = scratch.Resize(e.h, rows*e.m*e.layers*e.hidden)
		clear(e.h)
	}
	for t := 0; t < e.m-1; t++ {
		e.pairs = e.pairs[:0]
		for r := 0; r < rows; r++ {
			for j := 0; j+t <= w.Len[r]-2; j++ {
				e.pairs = append(e.pairs, pair{r, j})
			}
		}
		if len(e.pairs) == 0 {
			break
		}
		step := t
		act := func(p pair) []float32 { return w.Action(p.r, p.j+step) }
		if err := e.run(w, act, func(pair) bool { return step == 0 }, false, false, true); err != nil {
			return err
		}
	}
	return nil
}

func (e *ADMIncremental) predict(w *window.Window, alive []int, wantU bool, rng *rand.Rand, p *prediction) error {
	e.k = drawK(w, alive, rng, e.k)
	p.k = e.k
	od := e.obsDim
	e.pairs = e.pairs[:0]
	for _, r := range alive {
		for j := 0; j < w.Len[r]; j++ {
			e.pairs = append(e.pairs, pair{r, j})
		}
	}
	act := func(p pair) []float32 { return w.Action(p.r, w.Len[p.r]-1) }
	if err := e.run(w, act, func(p pair) bool { return p.j == w.Len[p.r]-1 }, true, true, false); err != nil {
		return err
	}
	na := len(alive)
	p.next = scratch.Resize(p.next, na*od)
	p.rew = scratch.Resize(p.rew, na)
	p.lv = scratch.Resize(p.lv, na*(od+1))
	if wantU {
		p.u = scratch.Resize(p.u, na)
	}
	// Row q's plans (slots 0..l-1) are pairs e.first[q]...
	e.first = scratch.Resize(e.first, na)
	i := 0
	for q, r := range alive {
		e.first[q] = i
		i += w.Len[r]
	}
	e.split.rowLoop()(na, func(lo, hi int) {
		var preds []float32 // the row's plan predictions in slot order, for U^ADM
		if wantU {
			preds = make([]float32, e.m*od)
		}
		for q := lo; q < hi; q++ {
			i, l := e.first[q], w.Len[alive[q]]
			c := e.pos[i+l-e.k[q]] // slot l-k holds the k-step plan
			copy(p.next[q*od:(q+1)*od], e.next[c*od:])
			p.rew[q] = e.rew[c]
			copy(p.lv[q*(od+1):(q+1)*(od+1)], e.lv[c*(od+1):])
			if wantU {
				for j := 0; j < l; j++ {
					copy(preds[j*od:(j+1)*od], e.next[e.pos[i+j]*od:])
				}
				p.u[q] = uADM(preds[:l*od], l, od)
			}
		}
	})
	return nil
}

// advance has nothing left to do: predict already stored every continuing
// row's cache in its shifted window order and zeroed the new state's slot
// (a row that ends is never read again).
func (e *ADMIncremental) advance(w *window.Window, alive []int, cont []bool) {}
