package rolldev

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/scratch"
)

// Mode is an Engine's style of evaluating the plans.
type Mode int

// Engine modes. Both give infer's transitions from the same seed (within
// float32 rounding).
const (
	// ModeAuto is ModeDirect for a roll-out without U^ADM (no penalty,
	// no WantU) and ModeIncremental for one with it, as admpo train
	// picks the engine.
	ModeAuto Mode = iota
	// ModeDirect runs each plan's GRU from its start state every step
	// (infer.ADMDirect): the drawn k's plans only, or every k = 1..Len for
	// U^ADM.
	ModeDirect
	// ModeIncremental keeps every window state's GRU states on the device
	// and advances each by one step a roll-out step (infer.ADMIncremental),
	// the head on every plan for U^ADM or on the drawn one's. Its cache is
	// allocated by the first such roll-out: IncrementalBytesPerRow(c) per
	// chunk row.
	ModeIncremental
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeDirect:
		return "direct"
	case ModeIncremental:
		return "incremental"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// IncrementalBytesPerRow is the device memory ModeIncremental adds to an
// Engine per chunk row of configuration c: for its M plans, two copies of
// the GRU states (2·Layers·Hidden floats), the head's input (Hidden), the
// unused actions of an input gather (M·ActDim) and four int32 indices;
// about 28 KB at hopper's size (M 5, 3×200 GRU, ad 3), beside the Direct
// forward's 4·((10+L)·H + M·(od+2ad) + 12(od+1)) bytes a plan, M plans a
// row (about 57 KB).
func IncrementalBytesPerRow(c ADMConfig) int {
	return 4*c.M*(2*c.Layers*c.Hidden+c.Hidden+c.M*c.ActDim+4) + 4
}

// incremental is an Engine's hidden-state cache (ModeIncremental): the
// plans of a step are its alive rows' window slots in row order (row q's
// slots 0..l-1), and after a step the states of its plans sit in h[cur]
// (per layer [plans, H], feature-major, ld the step's plan count), the
// cache the next step gathers from.
type incremental struct {
	h          [2][]device.Buffer
	x          device.Buffer // the head's input [plans, H]
	actX       device.Buffer // roll_plan_in's actions that are not used [m, plans, ad]
	lm1        device.Buffer // window lengths minus one (the replay's window)
	idx, hidx  device.Buffer // the gather's source columns; the heads' plans
	pk, pslot  device.Buffer // each plan's k and window row
	ones       device.Buffer // k = 1 for every plan
	all        []device.Buffer
	cur, ncols int // the cache: h[cur] with ncols columns, or cur -1: the replay's, in the Direct's states
	// col[q·m+j]: the cache column of alive row q's slot j (-1: the zero
	// state of the row's current state).
	col, hcol, hk, hs, hh []int32
}

// newIncremental allocates the cache for chunks of rows rows.
func newIncremental(d device.Device, c ADMConfig, rows int) (*incremental, error) {
	p := rows * c.M
	inc := &incremental{}
	var errs []error
	buf := allocInto(d, &inc.all, &errs)
	for i := range inc.h {
		inc.h[i] = make([]device.Buffer, c.Layers)
		for l := range inc.h[i] {
			buf(&inc.h[i][l], device.Float32, p*c.Hidden)
		}
	}
	buf(&inc.x, device.Float32, p*c.Hidden)
	buf(&inc.actX, device.Float32, c.M*p*c.ActDim)
	buf(&inc.lm1, device.Int32, rows)
	for _, b := range []*device.Buffer{&inc.idx, &inc.hidx, &inc.pk, &inc.pslot, &inc.ones} {
		buf(b, device.Int32, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(fmt.Errorf("incremental cache for %d rows (%d bytes a row): %w", rows,
			IncrementalBytesPerRow(c), err), inc.free(d))
	}
	ones := make([]int32, p)
	for i := range ones {
		ones[i] = 1
	}
	if err := d.UploadInt32(inc.ones, ones); err != nil {
		return nil, errors.Join(fmt.Errorf("incremental cache: %w", err), inc.free(d))
	}
	return inc, nil
}

// free releases the cache's buffers.
func (inc *incremental) free(d device.Device) error {
	err := freeAll(d, inc.all)
	inc.all = nil
	return err
}

// incremental reports whether the roll-out runs in ModeIncremental and
// then allocates the Engine's cache if it has none.
func (r *roll) incremental() (bool, error) {
	e := r.e
	switch e.Mode {
	case ModeAuto:
		if !r.wantU {
			return false, nil
		}
	case ModeDirect:
		return false, nil
	case ModeIncremental:
	default:
		return false, fmt.Errorf("rolldev: roll-out: unknown engine mode %v", e.Mode)
	}
	if e.inc == nil {
		inc, err := newIncremental(e.d, e.cfg, e.maxRows)
		if err != nil {
			return false, fmt.Errorf("rolldev: roll-out: %w", err)
		}
		e.inc = inc
	}
	return true, nil
}

// replay fills the cache of a chunk's rows rows from their start windows
// (window w, e.hlen): slot j of a row of l states gets the GRU states after
// its actions j..l-2 (infer.ADMIncremental's begin), each slot's a plan of
// k = l-1-j actions in the window of l-1 states, run by the Direct's GRU
// without heads; the current state's slot is the zero state.
func (r *roll) replay(w, rows int) error {
	e := r.e
	inc, dir, d, m := e.inc, e.dir, e.d, e.cfg.M
	inc.col = scratch.Resize(inc.col, rows*m)
	inc.hk = scratch.Resize(inc.hk, 0)
	inc.hs = scratch.Resize(inc.hs, rows)
	for q := range rows {
		l := e.hlen[q]
		inc.hs[q] = l - 1
		for j := range l - 1 {
			inc.hk = append(inc.hk, l-1-j)
		}
	}
	np := len(inc.hk)
	inc.hcol = scratch.Resize(inc.hcol, np)
	dir.sortByK(inc.hk, inc.hcol)
	dir.hslot = scratch.Resize(dir.hslot, np)
	dir.hkk = scratch.Resize(dir.hkk, np)
	i := 0
	for q := range rows {
		l := e.hlen[q]
		for j := range m {
			inc.col[q*m+j] = -1
			if j < int(l)-1 {
				p := inc.hcol[i]
				dir.hslot[p], dir.hkk[p], inc.col[q*m+j] = int32(q), l-1-int32(j), p
				i++
			}
		}
	}
	inc.cur, inc.ncols = -1, np
	if np == 0 {
		return nil
	}
	if err := uploadInts(d, []intUpload{{dir.slot, dir.hslot}, {dir.kk, dir.hkk}, {inc.lm1, inc.hs}}); err != nil {
		return err
	}
	return dir.gru(np, e.s[w], e.a[w], inc.lm1, rows)
}

// incPlans queues step's plans in ModeIncremental for the n alive rows
// (chunk rows alive, window rows slot, drawn k e.hkd) over window w of wr
// rows: each slot's plan advanced by one GRU step with the current action
// from its cached states (the zero state for the current state's slot),
// and the heads, of every plan with U^ADM, else of the drawn ones. It
// leaves the Direct's outputs (e.o, e.pidx) as plans does and returns the
// head count.
func (r *roll) incPlans(step, lo int, alive []int, w, wr int, drop bool) (int, error) {
	e := r.e
	inc, dir, d, c := e.inc, e.dir, e.d, e.cfg
	m, od, ad, H, L := c.M, c.ObsDim, c.ActDim, c.Hidden, c.Layers
	n := len(alive)
	slot := e.hslot[:n]
	// The plans: row q's slots 0..l-1 in order, with their cache columns.
	inc.hk, inc.hs, inc.hcol = inc.hk[:0], inc.hs[:0], inc.hcol[:0]
	for q, s := range slot {
		l := int(e.hlen[s])
		for j := range l {
			inc.hk, inc.hs, inc.hcol = append(inc.hk, int32(l-j)), append(inc.hs, s), append(inc.hcol, inc.col[q*m+j])
		}
	}
	np := len(inc.hk)
	// The heads: every plan's, or the drawn k's (slot l-k); pidx maps a
	// row's k to its head.
	nh := np
	dir.hpidx = scratch.Resize(dir.hpidx, n*m)
	dir.hkk = scratch.Resize(dir.hkk, 0)
	dir.hkeys = scratch.Resize(dir.hkeys, 0)
	inc.hh = inc.hh[:0]
	first := 0
	for q, s := range slot {
		l := int(e.hlen[s])
		for j := range l {
			k := l - j
			if !r.wantU && int32(k) != e.hkd[q] {
				continue
			}
			dir.hpidx[q*m+k-1] = int32(len(inc.hh))
			inc.hh = append(inc.hh, int32(first+j))
			dir.hkk = append(dir.hkk, int32(k))
			dir.hkeys = append(dir.hkeys, int32(lo+alive[q]))
		}
		first += l
	}
	if !r.wantU {
		nh = n
	}
	ups := []intUpload{{inc.pk, inc.hk}, {inc.pslot, inc.hs}, {inc.idx, inc.hcol}, {inc.hidx, inc.hh},
		{dir.pidx, dir.hpidx}, {dir.kk, dir.hkk}}
	if drop {
		ups = append(ups, intUpload{dir.keys, dir.hkeys})
	}
	if err := uploadInts(d, ups); err != nil {
		return 0, err
	}
	w8 := dir.w
	// The inputs: the current action (a k = 1 plan's) into actN, then the
	// slot's state (the plan's start) into obsN.
	if err := d.Launch("roll_plan_in", np, dir.obsN, dir.actN, e.s[w], e.a[w], e.lens, inc.pslot, inc.ones, w8.mean,
		w8.std, od, ad, m, wr); err != nil {
		return 0, err
	}
	if err := d.Launch("roll_plan_in", np, dir.obsN, inc.actX, e.s[w], e.a[w], e.lens, inc.pslot, inc.pk, w8.mean,
		w8.std, od, ad, m, wr); err != nil {
		return 0, err
	}
	// The cached states into the other half (zero for the current states).
	src, dst := dir.h, inc.h[0]
	if inc.cur >= 0 {
		src, dst = inc.h[inc.cur], inc.h[1-inc.cur]
	}
	for l := range L {
		if err := d.Launch("roll_gather_cols", np*H, dst[l], src[l], inc.idx, H, np, max(inc.ncols, 1),
			inc.ncols); err != nil {
			return 0, err
		}
	}
	if inc.cur >= 0 {
		inc.cur = 1 - inc.cur
	} else {
		inc.cur = 0
	}
	inc.ncols = np
	if err := d.Gemm(true, true, np, 3*H, od, 1, dir.obsN, od, w8.wiObs, 3*H, 0, dir.p0, np); err != nil {
		return 0, err
	}
	if err := dir.gruStep(np, np, dst, 0, 1); err != nil {
		return 0, err
	}
	// The heads' top states, copied (the head overwrites its input).
	if err := d.Launch("roll_gather_cols", nh*H, inc.x, dst[L-1], inc.hidx, H, nh, np, np); err != nil {
		return 0, err
	}
	return nh, dir.head(nh, inc.x, drop, r.seed, step)
}

// shiftCache moves the cache columns of alive row q (l states before the
// step, its plans from column first) to continuing row k's slots after
// the window's push: slot j's plan to slot j-1 when the window was full
// (slot 0's plan leaves), else to slot j, and the new current state's
// slot to the zero state (ADMIncremental's shift and zero rules). k ≤ q.
func (inc *incremental) shiftCache(k, first, l, m int) {
	row := inc.col[k*m : (k+1)*m]
	for j := range l {
		jj := j
		if l == m {
			jj--
		}
		if jj >= 0 {
			row[jj] = int32(first + j)
		}
	}
	row[min(l, m-1)] = -1 // slots past it are not read
}
