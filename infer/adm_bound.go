package infer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/admpo/admpo/infer/iobind"
	"github.com/admpo/admpo/internal/window"
)

// Binding values of Options.Binding.
const (
	BindingAuto = "auto" // bound on the CUDA provider, copies on the CPU (also "")
	BindingOn   = "on"   // always bound; an engine that cannot bind fails to open
	BindingOff  = "off"  // never bound: every run copies its tensors from and to Go memory
)

// CheckBinding returns an error unless b is a value Options.Binding takes.
func CheckBinding(b string) error {
	switch strings.ToLower(b) {
	case "", BindingAuto, BindingOn, BindingOff:
		return nil
	}
	return fmt.Errorf("infer: unknown binding %q (auto, on or off)", b)
}

// wantBinding reports whether opts ask an engine to bind its state, and
// whether they insist (Binding on).
func wantBinding(opts Options) (want, must bool) {
	switch strings.ToLower(opts.Binding) {
	case BindingOn:
		return true, true
	case BindingOff:
		return false, false
	}
	return opts.CUDA(), false
}

// incBound is the incremental engine's state bound to ONNX Runtime buffers
// (I/O binding). The GRU hidden states of the cached plans live in two
// state buffers of the provider's memory (device memory with CUDA), used
// in turn: a run's gather (the graph of iobind.GatherModel, in a session
// of its own) reads the hidden states of the plans it advances from the
// current buffer into the step graph's hidden input, and the step graph
// writes the advanced states into the other buffer, which becomes the
// current one. The hidden state never passes through Go memory. What Go
// computes (states, actions, dropout masks, gather indices) goes into
// host buffers bound as inputs, uploaded by ONNX Runtime once per run; the
// head outputs (next state, reward, log-variance) come back into host
// buffers.
//
// loc[r·m+j] locates the hidden state of row r's cached plan j in the
// current state buffer: layer l is the row base[...] + l·stride[...] of
// width hidden (-1: no state, a fresh plan).
type incBound struct {
	gather       *Session
	step, gs     *iobind.Session
	dev, host    *iobind.Memory
	alloc        *iobind.Allocator
	z            [2]*iobind.Buffer // state buffers: rows of hidden floats
	cur          int               // z[cur] holds the current states
	curRows      int               // rows of z[cur] written
	hin          *iobind.Buffer    // the step graph's hidden input
	in, out      hostBufs
	idx          *iobind.Buffer // gather indices: each piece's, then the carried ones
	gb, sb       []*iobind.Binding
	base, stride []int32
	nbase, nstr  []int32
	adv          []bool // slots advanced by the current run
	carry        []int  // slots carried over unchanged (begin only)
	pieces       []boundPiece
	hinRows      int // rows of the hidden input buffer in this run
}

// hostBufs are host buffers that grow on demand.
type hostBufs struct{ obs, act, mask, next, rew, lv *iobind.Buffer }

// boundPiece is one piece's offsets: its non-fresh plans and its rows in
// the hidden input (and index) buffer and the next state buffer.
type boundPiece struct{ n0, hin, z int }

// openBound prepares the bound state of e, whose session is open with
// opts; it opens the gather graph's session beside it.
func (e *ADMIncremental) openBound(opts Options) error {
	if !e.freshRows {
		return errors.New("the ADM step graph has no fresh_rows metadata (export it again)")
	}
	lib, err := LibraryPath()
	if err != nil {
		return err
	}
	gm, err := iobind.GatherModel(e.hidden)
	if err != nil {
		return err
	}
	b := &incBound{}
	ok := false
	defer func() {
		if !ok {
			b.close()
		}
	}()
	if b.gather, err = openEngine(gm, []string{iobind.GatherX, iobind.GatherA, iobind.GatherB}, []string{iobind.GatherOutA, iobind.GatherOutB}, opts); err != nil {
		return fmt.Errorf("the gather graph: %w", err)
	}
	if b.step, err = iobind.Attach(e.sess.s, lib); err != nil {
		return err
	}
	if b.gs, err = iobind.Attach(b.gather.s, lib); err != nil {
		return err
	}
	kind, id := iobind.CPU, 0
	if opts.CUDA() {
		kind = iobind.CUDA
		if id, err = cudaDeviceID(); err != nil {
			return err
		}
	}
	if b.dev, err = b.step.NewMemory(kind, id); err != nil {
		return err
	}
	if b.host, err = b.step.NewMemory(iobind.CPU, 0); err != nil {
		return err
	}
	if b.alloc, err = b.step.NewAllocator(b.dev); err != nil {
		if kind != iobind.CUDA {
			return err
		}
		// A provider added through the plugin API may name its memory
		// otherwise: take the memory of the hidden input's device.
		m, ierr := b.step.InputMemory(0)
		if ierr != nil {
			return fmt.Errorf("%w; %w", err, ierr)
		}
		if b.alloc, ierr = b.step.NewAllocator(m); ierr != nil {
			return fmt.Errorf("%w; with the memory of the hidden input's device: %w", err, ierr)
		}
		b.dev.Release()
		b.dev = m
	}
	for range e.split.workers {
		g, err := b.gs.NewBinding()
		if err != nil {
			return err
		}
		b.gb = append(b.gb, g)
		s, err := b.step.NewBinding()
		if err != nil {
			return err
		}
		b.sb = append(b.sb, s)
	}
	ok = true
	e.bound = b
	return nil
}

// cudaDeviceID is the device_id of the CUDA provider's options (0 unset).
func cudaDeviceID() (int, error) {
	o, err := CUDAOptions()
	if err != nil {
		return 0, err
	}
	v, ok := o["device_id"]
	if !ok {
		return 0, nil
	}
	id, err := strconv.Atoi(v)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("infer: CUDA provider option device_id=%q is not a device number", v)
	}
	return id, nil
}

// close releases every C object of b, then the gather session.
func (b *incBound) close() {
	for _, g := range append(b.gb, b.sb...) {
		g.Release()
	}
	b.gb, b.sb = nil, nil
	for _, p := range []**iobind.Buffer{&b.z[0], &b.z[1], &b.hin, &b.idx, &b.in.obs, &b.in.act, &b.in.mask, &b.out.next, &b.out.rew, &b.out.lv} {
		(*p).Free()
		*p = nil
	}
	b.alloc.Release()
	b.dev.Release()
	b.host.Release()
	b.gather.Close()
}

// grow makes *buf a buffer of at least n elements of size bytes each:
// device memory from the allocator, else host memory. The contents go.
func (b *incBound) grow(buf **iobind.Buffer, n, size int, device bool) error {
	bytes := max(n, 1) * size
	if *buf != nil && (*buf).Bytes() >= bytes {
		return nil
	}
	if err := (*buf).Free(); err != nil {
		return err
	}
	*buf = nil
	bytes += bytes / 4 // room to grow
	var err error
	if device {
		*buf, err = b.alloc.Alloc(bytes)
	} else {
		*buf, err = iobind.NewHost(bytes)
	}
	if err != nil {
		return fmt.Errorf("infer: bound roll-out: %w", err)
	}
	return nil
}

// reset forgets every cached state (a chunk's begin).
func (b *incBound) reset(slots int) {
	b.base = resizeFill(b.base, slots, -1)
	b.stride = resizeFill(b.stride, slots, 0)
	b.curRows = 0
}

func resizeFill[T any](s []T, n int, v T) []T {
	if cap(s) < n {
		s = make([]T, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = v
	}
	return s
}

// runBound is run on bound buffers: the same plans, pieces, order and
// outputs (e.next, e.rew, e.lv at rows e.pos), with the hidden states kept
// in the state buffers. With carry (begin), cached states the run does not
// advance are copied to the next state buffer; otherwise they are dropped
// (rows that ended and the plan that left a full window).
func (e *ADMIncremental) runBound(w *window.Window, actOf func(pair) []float32, fresh func(pair) bool, shift, keyed, carry bool) error {
	b := e.bound
	n := len(e.pairs)
	od, ad, H, L, m := e.obsDim, e.act, e.hidden, e.layers, e.m
	slots := len(b.base)
	e.rowBounds()
	// Offsets of every piece, the advanced slots and the carried ones.
	b.adv = resizeFill(b.adv, slots, false)
	b.pieces = b.pieces[:0]
	hin, z := 0, 0
	for k := 0; k+1 < len(e.bnd); k++ {
		lo, hi := e.bnd[k], e.bnd[k+1]
		n0 := 0
		for i := lo; i < hi; i++ {
			pr := e.pairs[i]
			b.adv[pr.r*m+pr.j] = true
			if !fresh(pr) {
				n0++
			}
		}
		b.pieces = append(b.pieces, boundPiece{n0: n0, hin: hin, z: z})
		hin += L * n0
		z += L * (hi - lo)
	}
	b.carry = b.carry[:0]
	if carry {
		for s := range slots {
			if b.base[s] >= 0 && !b.adv[s] {
				b.carry = append(b.carry, s)
			}
		}
	}
	nc := L * len(b.carry)
	b.hinRows = hin
	drop := e.drop.on()
	nmask := 0
	if drop {
		nmask = e.drop.blocks * n * e.drop.hidden
	}
	next := 1 - b.cur
	for _, g := range []struct {
		buf     **iobind.Buffer
		n, size int
		device  bool
		view    *[]float32
		elems   int
	}{
		{&b.z[next], (z + nc) * H, 4, true, nil, 0}, {&b.hin, hin * H, 4, true, nil, 0},
		{&b.idx, hin + nc, 8, false, nil, 0},
		{&b.in.obs, n * od, 4, false, &e.obs, n * od}, {&b.in.act, n * ad, 4, false, &e.a, n * ad},
		{&b.in.mask, nmask, 4, false, nil, 0},
		{&b.out.next, n * od, 4, false, &e.next, n * od}, {&b.out.rew, n, 4, false, &e.rew, n},
		{&b.out.lv, n * (od + 1), 4, false, &e.lv, n * (od + 1)},
	} {
		if err := b.grow(g.buf, g.n, g.size, g.device); err != nil {
			return err
		}
		if g.view != nil {
			*g.view = (*g.buf).Float32s()[:g.elems]
		}
	}
	idx := b.idx.Int64s()
	for i, s := range b.carry { // the carried states go after the advanced ones
		for l := range L {
			idx[hin+i*L+l] = int64(b.base[s]) + int64(l)*int64(b.stride[s])
		}
	}
	b.nbase = resizeFill(b.nbase, slots, -1)
	b.nstr = resizeFill(b.nstr, slots, 0)
	for i, s := range b.carry {
		b.nbase[s], b.nstr[s] = int32(z+i*L), 1
	}
	if len(e.pos) < n {
		e.pos = make([]int, n)
	}
	e.pos = e.pos[:n]
	var mask []float32
	if drop {
		mask = b.in.mask.Float32s()
	}
	pack := e.split.packer()
	err := e.split.each(e.bnd, func(wi, lo, hi int) error {
		k := pieceOf(e.bnd, lo)
		pc := b.pieces[k]
		pn, n0 := hi-lo, pc.n0
		var pmask []float32
		if drop {
			pmask = mask[lo*e.drop.blocks*e.drop.hidden : hi*e.drop.blocks*e.drop.hidden]
		}
		c, f := 0, n0
		for i := lo; i < hi; i++ { // each pair's position in the piece
			pr := e.pairs[i]
			var q int
			if fresh(pr) {
				q, f = f, f+1
			} else {
				q, c = c, c+1
				if b.base[pr.r*m+pr.j] < 0 {
					return fmt.Errorf("infer: bound roll-out: row %d's plan %d has no cached state", pr.r, pr.j)
				}
			}
			e.pos[i] = lo + q
		}
		pack(lo, hi, func(lo2, hi2 int) {
			for i := lo2; i < hi2; i++ {
				pr := e.pairs[i]
				q := e.pos[i] - lo
				if q < n0 { // a cached plan: gather its state
					s := pr.r*m + pr.j
					for l := range L { // hidden input [layers, n0, hidden]
						idx[pc.hin+l*n0+q] = int64(b.base[s]) + int64(l)*int64(b.stride[s])
					}
				}
				copy(e.obs[(lo+q)*od:], w.State(pr.r, pr.j))
				copy(e.a[(lo+q)*ad:], actOf(pr))
				switch {
				case drop && keyed:
					e.drop.fill(pmask, pn, q, pr.r, w.Len[pr.r]-pr.j)
				case drop:
					e.drop.ones(pmask, pn, q)
				}
			}
		})
		if err := b.runPiece(e, wi, k, lo, hi, k == 0 && nc > 0, nc, z); err != nil {
			return err
		}
		pack(lo, hi, func(lo2, hi2 int) {
			for i := lo2; i < hi2; i++ {
				pr := e.pairs[i]
				j := pr.j
				if shift && w.Len[pr.r] == m {
					if j == 0 {
						continue
					}
					j--
				}
				s := pr.r*m + j
				b.nbase[s], b.nstr[s] = int32(pc.z+e.pos[i]-lo), int32(pn)
			}
		})
		if shift { // after every pair's store (a row's new slot is none of them)
			pack(lo, hi, func(lo2, hi2 int) {
				for i := lo2; i < hi2; i++ {
					if r := e.pairs[i].r; i+1 == hi || e.pairs[i+1].r != r {
						s := r*m + min(w.Len[r], m-1)
						b.nbase[s], b.nstr[s] = -1, 0
					}
				}
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.base, b.nbase = b.nbase, b.base
	b.stride, b.nstr = b.nstr, b.stride
	b.cur, b.curRows = next, z+nc
	return nil
}

// pieceOf is the index of the piece that starts at lo.
func pieceOf(bnd []int, lo int) int {
	i, j := 0, len(bnd)-1
	for i < j { // first boundary >= lo
		h := (i + j) / 2
		if bnd[h] < lo {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// runPiece runs piece k (plans lo..hi) on worker wi's bindings: the
// gather of its hidden input (and, with withCarry, of the nc carried state
// rows into the next state buffer at row z), then the step graph.
func (b *incBound) runPiece(e *ADMIncremental, wi, k, lo, hi int, withCarry bool, nc, z int) (err error) {
	pc := b.pieces[k]
	pn, n0 := hi-lo, pc.n0
	H, L, od, ad := e.hidden, e.layers, e.obsDim, e.act
	next := 1 - b.cur
	var vals []*iobind.Value
	defer func() {
		for _, v := range vals {
			v.Release()
		}
	}()
	val := func(mem *iobind.Memory, buf *iobind.Buffer, t iobind.Type, off int, shape ...int64) *iobind.Value {
		if err != nil {
			return nil
		}
		var v *iobind.Value
		v, err = iobind.NewValue(mem, buf, t, off, shape...)
		vals = append(vals, v)
		return v
	}
	bind := func(g *iobind.Binding, inputs bool, name string, v *iobind.Value) {
		if err != nil {
			return
		}
		if inputs {
			err = g.BindInput(name, v)
		} else {
			err = g.BindOutput(name, v)
		}
	}
	na, nb := L*n0, 0
	if withCarry {
		nb = nc
	}
	if na+nb > 0 {
		g := b.gb[wi]
		ib, cb := 0, 0 // the carried rows' indices and their rows in the next state buffer
		if withCarry {
			ib, cb = b.hinRows, z
		}
		bind(g, true, iobind.GatherX, val(b.dev, b.z[b.cur], iobind.Float32, 0, int64(b.curRows), int64(H)))
		bind(g, true, iobind.GatherA, val(b.host, b.idx, iobind.Int64, pc.hin, int64(na)))
		bind(g, true, iobind.GatherB, val(b.host, b.idx, iobind.Int64, ib, int64(nb)))
		bind(g, false, iobind.GatherOutA, val(b.dev, b.hin, iobind.Float32, pc.hin*H, int64(na), int64(H)))
		bind(g, false, iobind.GatherOutB, val(b.dev, b.z[next], iobind.Float32, cb*H, int64(nb), int64(H)))
		if err == nil {
			err = b.runBinding(g)
		}
		if err != nil {
			return fmt.Errorf("infer: bound roll-out: gather: %w", err)
		}
	}
	g := b.sb[wi]
	in, out := e.sess.inputs, e.sess.outputs
	bind(g, true, in[0], val(b.dev, b.hin, iobind.Float32, pc.hin*H, int64(L), int64(n0), int64(H)))
	bind(g, true, in[1], val(b.host, b.in.obs, iobind.Float32, lo*od, int64(pn), int64(od)))
	bind(g, true, in[2], val(b.host, b.in.act, iobind.Float32, lo*ad, int64(pn), int64(ad)))
	if e.drop.on() {
		bh := e.drop.blocks * e.drop.hidden
		bind(g, true, in[3], val(b.host, b.in.mask, iobind.Float32, lo*bh, int64(e.drop.blocks), int64(pn), int64(e.drop.hidden)))
	}
	bind(g, false, out[0], val(b.dev, b.z[next], iobind.Float32, pc.z*H, int64(L), int64(pn), int64(H)))
	bind(g, false, out[1], val(b.host, b.out.next, iobind.Float32, lo*od, int64(pn), int64(od)))
	bind(g, false, out[2], val(b.host, b.out.rew, iobind.Float32, lo, int64(pn), 1))
	bind(g, false, out[3], val(b.host, b.out.lv, iobind.Float32, lo*(od+1), int64(pn), int64(od+1)))
	if err == nil {
		err = b.runBinding(g)
	}
	if err != nil {
		return fmt.Errorf("infer: bound roll-out: %w", err)
	}
	return nil
}

// runBinding runs g and waits for its outputs.
func (b *incBound) runBinding(g *iobind.Binding) error {
	if err := g.SyncInputs(); err != nil {
		return err
	}
	if err := g.Run(); err != nil {
		return err
	}
	return g.SyncOutputs()
}
