package infer

import (
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/internal/scratch"
	"github.com/admpo/admpo/internal/window"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// openADMGraph opens an ADM graph of signature sig for an engine and reads
// the metadata every admpo ADM graph carries (m, observation and action
// sizes); the session is closed on an error. Errors name the graph as
// opening ("the ADM", "the ADM step graph") and its metadata as meta
// ("ADM", "ADM step").
func openADMGraph(model []byte, sig schema.Signature, opts Options, opening, meta string) (s *Session, m, od, ad int, err error) {
	s, err = openEngine(model, sig.Inputs, sig.Outputs, opts, schema.DropoutMask)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("%w (opening %s)", err, opening)
	}
	if m, err = MetaInt(s.meta, schema.MetaM); err == nil {
		if od, err = MetaInt(s.meta, schema.MetaObsDim); err == nil {
			ad, err = MetaInt(s.meta, schema.MetaActDim)
		}
	}
	if err != nil {
		s.Close()
		return nil, 0, 0, 0, fmt.Errorf("infer: %s metadata: %w", meta, err)
	}
	return s, m, od, ad, nil
}

// ADMDirect is the direct ADM-Roll engine: every prediction runs the GRU
// over the whole k-step plan from its start state (the exported "adm"
// graph with per-row sequence lengths). With U^ADM it evaluates all
// k = 1..min(history, m) plans of every row. Export the graph in the packed
// form (onnx.ADMPacked) for speed: it runs each plan's own k GRU steps
// rather than all m. A roll-out step is cut into sub-batches of
// Options.BatchRows plans run by Options.Workers threads.
type ADMDirect struct {
	sess           *Session
	m, obsDim, act int
	split          split

	k                        []int
	plans                    []plan
	first                    []int // each alive row's first plan (U^ADM)
	bnd                      []int
	obs, acts, next, rew, lv []float32
	mask                     []float32 // [blocks, plans, hidden] per piece (dropout only)
	lens                     []int32
	drop                     dropout
}

// plan is one ADM evaluation: row r's k-step plan.
type plan struct{ r, k int }

// OpenADMDirect loads an ADM exported by admpo's onnx.ExportADM. A graph
// exported with dropout (metadata "dropout") rolls out with MC dropout:
// see DropoutKeep.
func OpenADMDirect(model []byte, opts Options) (*ADMDirect, error) {
	s, m, od, ad, err := openADMGraph(model, schema.ADM(), opts, "the ADM", "ADM")
	if err != nil {
		return nil, err
	}
	d, err := engineDropout(s)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &ADMDirect{sess: s, m: m, obsDim: od, act: ad, split: engineSplit(opts), drop: d}, nil
}

// Dropout is the graph's MC dropout probability (0: none).
func (e *ADMDirect) Dropout() float64 { return e.drop.p }

func (e *ADMDirect) dropState() *dropout { return &e.drop }

// M is the model's maximum backtracking length.
func (e *ADMDirect) M() int { return e.m }

// Rollout runs ADM-Roll from the start sequences.
func (e *ADMDirect) Rollout(p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error) {
	return runRollout(e, p, start, cfg, rng)
}

// Close frees the session.
func (e *ADMDirect) Close() { e.sess.Close() }

func (e *ADMDirect) dims() (int, int, int) { return e.m, e.obsDim, e.act }

func (e *ADMDirect) begin(w *window.Window) error { return nil }

func (e *ADMDirect) rowLoop() func(n int, f func(lo, hi int)) { return e.split.rowLoop() }

func (e *ADMDirect) chunkRows() int { return e.split.chunkRows() }

func (e *ADMDirect) advance(w *window.Window, alive []int, cont []bool) {}

// Predict evaluates plans in one call: obs [n, obsDim] start states, acts
// [m, n, act] sequence-first, lens [n] in 1..m; it fills next, rew, lv.
// A graph with dropout needs PredictDropout.
func (e *ADMDirect) Predict(obs, acts []float32, lens []int32, next, rew, lv []float32) error {
	if e.drop.on() {
		return fmt.Errorf("infer: the ADM has MC dropout (p=%g): use PredictDropout with masks", e.drop.p)
	}
	return e.run(len(lens), obs, acts, lens, nil, next, rew, lv)
}

// PredictDropout is Predict on a graph with dropout, with keep flags mask
// [res_blocks, n, hidden] (1 keep, 0 drop; the graph scales by 1/(1-p)).
func (e *ADMDirect) PredictDropout(obs, acts []float32, lens []int32, mask, next, rew, lv []float32) error {
	if !e.drop.on() {
		return fmt.Errorf("infer: the ADM has no dropout: use Predict")
	}
	if want := e.drop.blocks * len(lens) * e.drop.hidden; len(mask) != want {
		return fmt.Errorf("infer: dropout mask has %d values, want %d (res_blocks %d x %d plans x hidden %d)",
			len(mask), want, e.drop.blocks, len(lens), e.drop.hidden)
	}
	return e.run(len(lens), obs, acts, lens, mask, next, rew, lv)
}

// run evaluates n plans with the given input and output buffers (mask:
// the dropout keep flags, with dropout only).
func (e *ADMDirect) run(n int, obs, acts []float32, lens []int32, mask, next, rew, lv []float32) error {
	var ts tensors
	defer ts.destroy()
	vals, err := wrapAll(&ts, make([]ort.Value, 0, 7), f32Buf{obs, []int{n, e.obsDim}}, f32Buf{acts, []int{e.m, n, e.act}})
	if err != nil {
		return err
	}
	lt, err := wrap(&ts, lens, n)
	if err != nil {
		return err
	}
	vals = append(vals, lt)
	if e.drop.on() {
		mt, err := wrap(&ts, mask, e.drop.blocks, n, e.drop.hidden)
		if err != nil {
			return err
		}
		vals = append(vals, mt)
	}
	nin := len(vals)
	vals, err = wrapAll(&ts, vals, f32Buf{next, []int{n, e.obsDim}}, f32Buf{rew, []int{n, 1}}, f32Buf{lv, []int{n, e.obsDim + 1}})
	if err != nil {
		return err
	}
	return e.sess.Run(vals[:nin], vals[nin:])
}

func (e *ADMDirect) predict(w *window.Window, alive []int, wantU bool, rng *rand.Rand, p *prediction) error {
	e.k = drawK(w, alive, rng, e.k)
	p.k = e.k
	od, ad, m := e.obsDim, e.act, e.m
	// One plan per row (the drawn k), or every k = 1..l per row for U^ADM.
	e.plans = e.plans[:0]
	for q, r := range alive {
		if !wantU {
			e.plans = append(e.plans, plan{r, e.k[q]})
			continue
		}
		for k := 1; k <= w.Len[r]; k++ {
			e.plans = append(e.plans, plan{r, k})
		}
	}
	n := len(e.plans)
	e.obs = scratch.Resize(e.obs, n*od)
	e.acts = scratch.Resize(e.acts, m*n*ad)
	e.lens = scratch.Resize(e.lens, n)
	e.next = scratch.Resize(e.next, n*od)
	e.rew = scratch.Resize(e.rew, n)
	e.lv = scratch.Resize(e.lv, n*(od+1))
	drop := e.drop.on()
	if drop {
		e.mask = scratch.Resize(e.mask, e.drop.blocks*n*e.drop.hidden)
	}
	// Each piece [lo, hi) owns obs/lens/outputs rows lo..hi-1 and the
	// sequence-first action block acts[m·lo·ad : m·hi·ad] of shape [m, hi-lo, ad].
	e.bnd = e.split.bounds(n, e.bnd)
	pack := e.split.packer()
	err := e.split.each(e.bnd, func(_, lo, hi int) error {
		pn := hi - lo
		acts := e.acts[m*lo*ad : m*hi*ad]
		var mask []float32 // the piece's [blocks, pn, hidden]
		if drop {
			bh := e.drop.blocks * e.drop.hidden
			mask = e.mask[lo*bh : hi*bh]
		}
		pack(lo, hi, func(a, b int) {
			for i := a; i < b; i++ {
				pl := e.plans[i]
				l := w.Len[pl.r]
				copy(e.obs[i*od:(i+1)*od], w.State(pl.r, l-pl.k))
				for j := 0; j < m; j++ { // steps past the plan's k are zeros
					dst := acts[(j*pn+i-lo)*ad : (j*pn+i-lo+1)*ad]
					if j < pl.k {
						copy(dst, w.Action(pl.r, l-pl.k+j))
					} else {
						clear(dst)
					}
				}
				e.lens[i] = int32(pl.k)
				if drop {
					e.drop.fill(mask, pn, i-lo, pl.r, pl.k)
				}
			}
		})
		return e.run(pn, e.obs[lo*od:hi*od], acts, e.lens[lo:hi], mask,
			e.next[lo*od:hi*od], e.rew[lo:hi], e.lv[lo*(od+1):hi*(od+1)])
	})
	if err != nil {
		return err
	}
	if !wantU {
		p.next, p.rew, p.lv = e.next, e.rew, e.lv
		return nil
	}
	na := len(alive)
	p.next = scratch.Resize(p.next, na*od)
	p.rew = scratch.Resize(p.rew, na)
	p.lv = scratch.Resize(p.lv, na*(od+1))
	p.u = scratch.Resize(p.u, na)
	// Row q's plans (k = 1..l) start at plan e.first[q].
	e.first = scratch.Resize(e.first, na)
	i := 0
	for q, r := range alive {
		e.first[q] = i
		i += w.Len[r]
	}
	e.split.rowLoop()(na, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			i, l := e.first[q], w.Len[alive[q]]
			c := i + e.k[q] - 1 // plans were added for k = 1..l
			copy(p.next[q*od:(q+1)*od], e.next[c*od:])
			p.rew[q] = e.rew[c]
			copy(p.lv[q*(od+1):(q+1)*(od+1)], e.lv[c*(od+1):])
			p.u[q] = uADM(e.next[i*od:(i+l)*od], l, od)
		}
	})
	return nil
}
