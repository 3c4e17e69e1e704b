package rolldev

import (
	"errors"
	"fmt"
	"math"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/scratch"
)

// Direct evaluates k-step plans of an ADM on a device, as infer.ADMDirect
// does with the packed graph. It is not safe for concurrent use.
type Direct struct {
	d        device.Device
	cfg      ADMConfig
	maxPlans int
	w        *weights
	set      bool
	thr      int32   // rollout.DropThreshold's bits
	scale    float32 // 1/(1-p)

	// Inputs: a window of one row per plan (its start state at state 0 of
	// m, its actions at 0..k-1; [plans, m, od] and [plans, m, ad]), each
	// row's k, the sorted plans' rows, k, start rows (dropout) and the
	// caller's plans' sorted positions: per plan (pos) and as roll_finish's
	// plan indices (pidx [plans, m]).
	sw, aw                        device.Buffer
	lens, slot, kk, keys, pos     device.Buffer
	pidx, ident, base             device.Buffer
	obsN, actN, p0, gi, gh, u     device.Buffer
	h                             []device.Buffer // per GRU layer [plans, H], feature-major
	o, zob, zeps, zw, wsum        device.Buffer
	next, mean, rew, uq, fin      device.Buffer
	lvs, lv, dout, tmax, tmin, rl device.Buffer
	all                           []device.Buffer

	// Host scratch.
	hsw, haw                              []float32
	hlens, hslot, hkk, hkeys, hpos, hpidx []int32
	count                                 []int // plans per k, then the prefix sizes
}

// NewDirect allocates a Direct on d for ADMs of configuration c and up to
// maxPlans plans a call. SetADM loads the weights. Its buffers take about
// 4·((10+L)·H + m·(od+2ad) + 12d) bytes a plan (H hidden, L layers,
// d = od+1): about 1.5 GB for 131072 plans at hopper's size.
func NewDirect(d device.Device, c ADMConfig, maxPlans int) (*Direct, error) {
	return newDirect(d, c, maxPlans, true)
}

// newDirect is NewDirect; without window it allocates no window of its own
// (sw, aw: the Engine's plans read its window), so Predict cannot run.
func newDirect(d device.Device, c ADMConfig, maxPlans int, window bool) (*Direct, error) {
	if err := c.check(maxPlans); err != nil {
		return nil, err
	}
	e := &Direct{d: d, cfg: c, maxPlans: maxPlans, scale: 1}
	alloc := func(t device.Type, n int) (device.Buffer, error) {
		b, err := d.Alloc(t, n)
		if err == nil {
			e.all = append(e.all, b)
		}
		return b, err
	}
	fail := func(err error) (*Direct, error) {
		return nil, errors.Join(fmt.Errorf("rolldev: new direct: %w", err), e.Close())
	}
	var err error
	if e.w, err = allocWeights(c, alloc); err != nil {
		return fail(err)
	}
	n, m, od, ad, h, dd := maxPlans, c.M, c.ObsDim, c.ActDim, c.Hidden, c.d()
	var errs []error
	buf := allocInto(d, &e.all, &errs)
	if window {
		buf(&e.sw, device.Float32, n*m*od)
		buf(&e.aw, device.Float32, n*m*ad)
	}
	for _, f := range []struct {
		dst   *device.Buffer
		t     device.Type
		count int
	}{
		{&e.lens, device.Int32, n}, {&e.slot, device.Int32, n}, {&e.kk, device.Int32, n}, {&e.keys, device.Int32, n},
		{&e.pos, device.Int32, n}, {&e.pidx, device.Int32, n * m}, {&e.ident, device.Int32, n},
		{&e.base, device.Int32, 2 * n},
		{&e.obsN, device.Float32, n * od}, {&e.actN, device.Float32, m * n * ad},
		{&e.p0, device.Float32, n * 3 * h}, {&e.gi, device.Float32, n * 3 * h}, {&e.gh, device.Float32, n * 3 * h},
		{&e.u, device.Float32, n * h},
		{&e.o, device.Float32, n * 2 * dd}, {&e.zob, device.Float32, 2 * dd}, {&e.zeps, device.Float32, n * dd},
		{&e.zw, device.Float32, n}, {&e.wsum, device.Float32, 1},
		{&e.next, device.Float32, n * od}, {&e.mean, device.Float32, n * od}, {&e.rew, device.Float32, n},
		{&e.uq, device.Float32, n}, {&e.fin, device.Int32, n},
		{&e.lvs, device.Float32, n * dd}, {&e.lv, device.Float32, n * dd}, {&e.dout, device.Float32, n * 2 * dd},
		{&e.tmax, device.Float32, n * dd}, {&e.tmin, device.Float32, n * dd}, {&e.rl, device.Float32, n},
	} {
		buf(f.dst, f.t, f.count)
	}
	e.h = make([]device.Buffer, c.Layers)
	for l := range e.h {
		buf(&e.h[l], device.Float32, n*h)
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	ident := make([]int32, n)
	for i := range ident {
		ident[i] = int32(i)
	}
	if err := d.UploadInt32(e.ident, ident); err != nil {
		return fail(err)
	}
	if c.Dropout > 0 {
		e.thr = int32(rollout.DropThreshold(c.Dropout))
		e.scale = float32(1 / (1 - c.Dropout))
	}
	return e, nil
}

// Config returns the model's configuration.
func (e *Direct) Config() ADMConfig { return e.cfg }

// MaxPlans returns the most plans one call takes.
func (e *Direct) MaxPlans() int { return e.maxPlans }

// SetADM uploads a trained ADM's weights, once for any number of calls.
func (e *Direct) SetADM(w ADMWeights) error {
	if e.w == nil {
		return fmt.Errorf("rolldev: set ADM: %w", device.ErrClosed)
	}
	if err := check(e.cfg, w); err != nil {
		return err
	}
	// A failed upload may leave some tensors new and some old.
	e.set = false
	if err := e.w.upload(e.d, e.cfg, w); err != nil {
		return err
	}
	e.set = true
	return nil
}

// Predict evaluates n = len(lens) plans with infer.ADMDirect.Predict's
// contract: obs [n, ObsDim] start states, acts [M, n, ActDim]
// sequence-first, lens [n] the plans' lengths k in 1..M (actions past a
// plan's k are not read); it fills next [n, ObsDim] with the start state
// plus the predicted mean change after k steps, rew [n] with the reward's
// mean and lv [n, ObsDim+1] with the soft-clamped log-variance (last
// column: the reward's), as the ADM graph's next_obs_mean, reward_mean and
// logvar. An ADM with dropout needs PredictDropout.
func (e *Direct) Predict(obs, acts []float32, lens []int32, next, rew, lv []float32) error {
	if e.cfg.Dropout > 0 {
		return fmt.Errorf("rolldev: predict: the ADM has MC dropout (p=%g): use PredictDropout", e.cfg.Dropout)
	}
	return e.predict(obs, acts, lens, nil, 0, 0, next, rew, lv)
}

// PredictDropout is Predict on an ADM with MC dropout: plan q's keep flags
// are infer.DropoutKeep(seed, step, int(rows[q]), lens[q], p) (rows [n]:
// each plan's start row, the key infer's engines give row r of a chunk
// starting at row row0: row0+r), drawn on the device. Its results are the
// ADM graph's fed with those flags as its dropout_mask.
func (e *Direct) PredictDropout(obs, acts []float32, lens, rows []int32, seed int64, step int,
	next, rew, lv []float32) error {
	if e.cfg.Dropout == 0 {
		return fmt.Errorf("rolldev: predict: the ADM has no dropout: use Predict")
	}
	if len(rows) != len(lens) {
		return fmt.Errorf("rolldev: predict: %d start rows for %d plans", len(rows), len(lens))
	}
	if step < math.MinInt32 || step > math.MaxInt32 {
		return fmt.Errorf("rolldev: predict: roll-out step %d outside int32: %w", step, device.ErrRange)
	}
	return e.predict(obs, acts, lens, rows, seed, step, next, rew, lv)
}

// predict checks the arguments and runs the forward pass; rows nil: no
// dropout.
func (e *Direct) predict(obs, acts []float32, lens, rows []int32, seed int64, step int, next, rew, lv []float32) error {
	c := e.cfg
	n, od, ad, m := len(lens), c.ObsDim, c.ActDim, c.M
	switch {
	case e.w == nil:
		return fmt.Errorf("rolldev: predict: %w", device.ErrClosed)
	case !e.set:
		return fmt.Errorf("rolldev: predict: no weights (SetADM)")
	case e.sw == nil:
		return fmt.Errorf("rolldev: predict: an Engine's forward takes no plans from the host")
	case n > e.maxPlans:
		return fmt.Errorf("rolldev: predict: %d plans, at most %d: %w", n, e.maxPlans, device.ErrRange)
	}
	for _, s := range []struct {
		name      string
		got, want int
	}{
		{"obs", len(obs), n * od}, {"acts", len(acts), m * n * ad}, {"next", len(next), n * od}, {"rew", len(rew), n},
		{"lv", len(lv), n * (od + 1)},
	} {
		if s.got != s.want {
			return fmt.Errorf("rolldev: predict: %s has %d values, want %d for %d plans", s.name, s.got, s.want, n)
		}
	}
	for q, k := range lens {
		if k < 1 || int(k) > m {
			return fmt.Errorf("rolldev: predict: plan %d has length %d, outside 1..%d", q, k, m)
		}
	}
	if n == 0 {
		return nil
	}
	if err := e.pack(obs, acts, lens, rows); err != nil {
		return fmt.Errorf("rolldev: predict: %w", err)
	}
	if err := e.forward(n, rows != nil, seed, step); err != nil {
		return fmt.Errorf("rolldev: predict: %w", err)
	}
	if err := e.d.Download(next, e.mean); err != nil {
		return fmt.Errorf("rolldev: predict: next: %w", err)
	}
	if err := e.d.Download(rew, e.rew); err != nil {
		return fmt.Errorf("rolldev: predict: rew: %w", err)
	}
	if err := e.d.Download(lv, e.lv); err != nil {
		return fmt.Errorf("rolldev: predict: lv: %w", err)
	}
	return nil
}

// pack sorts the plans by k, longest first (a stable counting sort: plans
// of equal k keep the caller's order), leaves in e.count[j] the number of
// plans with k > j (the prefix GRU step j runs) and uploads the inputs.
func (e *Direct) pack(obs, acts []float32, lens, rows []int32) error {
	n, od, ad, m := len(lens), e.cfg.ObsDim, e.cfg.ActDim, e.cfg.M
	e.hpos = scratch.Resize(e.hpos, n)
	e.sortByK(lens, e.hpos)
	e.hsw = scratch.Resize(e.hsw, n*m*od)
	e.haw = scratch.Resize(e.haw, n*m*ad)
	e.hslot = scratch.Resize(e.hslot, n)
	e.hkk = scratch.Resize(e.hkk, n)
	e.hpidx = scratch.Resize(e.hpidx, n*m)
	if rows != nil {
		e.hkeys = scratch.Resize(e.hkeys, n)
	}
	for q, k := range lens {
		i := e.hpos[q]
		e.hslot[i], e.hkk[i] = int32(q), k
		e.hpidx[q*m+int(k)-1] = int32(i)
		if rows != nil {
			e.hkeys[i] = rows[q]
		}
		copy(e.hsw[q*m*od:(q*m+1)*od], obs[q*od:(q+1)*od])
		for j := range int(k) {
			copy(e.haw[(q*m+j)*ad:(q*m+j+1)*ad], acts[(j*n+q)*ad:(j*n+q+1)*ad])
		}
	}
	for _, u := range []struct {
		dst device.Buffer
		src []float32
	}{{e.sw, e.hsw}, {e.aw, e.haw}} {
		if err := e.d.Upload(u.dst, u.src); err != nil {
			return err
		}
	}
	for _, u := range []struct {
		dst device.Buffer
		src []int32
	}{{e.lens, lens}, {e.slot, e.hslot}, {e.kk, e.hkk}, {e.pos, e.hpos}, {e.pidx, e.hpidx}} {
		if err := e.d.UploadInt32(u.dst, u.src); err != nil {
			return err
		}
	}
	if rows != nil {
		return e.d.UploadInt32(e.keys, e.hkeys)
	}
	return nil
}

// sortByK sorts plans of lengths lens (k in 1..M) by k, longest first (a
// stable counting sort: plans of equal k keep their order): plan q goes to
// position pos[q], and e.count[j] becomes the number of plans with k > j
// (the prefix GRU step j runs; e.count[M] = 0).
func (e *Direct) sortByK(lens, pos []int32) {
	m := e.cfg.M
	e.count = scratch.Resize(e.count, m+1)
	clear(e.count)
	for _, k := range lens {
		e.count[k]++
	}
	// The start of k's plans in the sorted order, in e.count[k]: after
	// every longer plan.
	at := 0
	for k := m; k >= 1; k-- {
		at, e.count[k] = at+e.count[k], at
	}
	for q, k := range lens {
		pos[q] = int32(e.count[k])
		e.count[k]++
	}
	// e.count[k] is now the end of k's plans, so e.count[k+1] = #plans with
	// k' > k; the prefix of step j is e.count[j+1] (0 past m).
	for j := range m {
		e.count[j] = e.count[j+1]
	}
	e.count[m] = 0
}

// forward queues the n packed plans' forward pass (plans) and the outputs
// in the caller's order in e.mean (next), e.rew and e.lv.
func (e *Direct) forward(n int, drop bool, seed int64, step int) error {
	c, w, d := e.cfg, e.w, e.d
	od, m, dd := c.ObsDim, c.M, c.d()
	if err := e.plans(n, e.sw, e.aw, e.lens, n, drop, seed, step); err != nil {
		return err
	}
	// next = start + mean and the reward's mean, in the caller's order:
	// roll_finish over one plan a row (its sorted position from pidx),
	// with zero noise and bias (o has it); its "mean" is the next state.
	if err := d.Launch("roll_finish", n, e.o, e.zob, w.mx, w.mn, e.sw, e.lens, e.ident, e.lens, e.pidx, e.zeps, e.next,
		e.rew, e.uq, e.mean, e.fin, od, m, n, n, 0, 0, float32(0)); err != nil {
		return err
	}
	// The soft-clamped log-variance (adm_head with zero targets and
	// weights: its loss terms are scratch), then back to the caller's order.
	if err := d.Launch("adm_head", n, e.o, w.mx, w.mn, e.zeps, e.zw, e.wsum, e.lvs, e.dout, e.tmax, e.tmin, e.rl,
		dd); err != nil {
		return err
	}
	return d.Launch("gather_rows", n*dd, e.lv, e.lvs, e.pos, dd, n)
}

// plans queues the forward pass of n plans sorted by k (sortByK; e.slot,
// e.kk and, with drop, e.keys hold their window rows, lengths and start
// rows) over the window s [rows, m, od], a [rows, m, ad], lens [rows]:
// their GRU states (gru) and the head on every plan's last state, the
// output layer with its bias in e.o [n, 2(od+1)] (row-major, sorted order).
func (e *Direct) plans(n int, s, a, lens device.Buffer, rows int, drop bool, seed int64, step int) error {
	if err := e.gru(n, s, a, lens, rows); err != nil {
		return err
	}
	return e.head(n, e.h[e.cfg.Layers-1], drop, seed, step)
}

// gru queues the GRU of n plans sorted by k (as plans): their inputs
// gathered and z-scored, and the GRU's steps over the running prefix; each
// plan's states after its k steps are left in e.h (per layer [n, H],
// feature-major).
func (e *Direct) gru(n int, s, a, lens device.Buffer, rows int) error {
	c, w, d := e.cfg, e.w, e.d
	od, ad, m, h3 := c.ObsDim, c.ActDim, c.M, 3*c.Hidden
	if err := d.Launch("roll_plan_in", n, e.obsN, e.actN, s, a, lens, e.slot, e.kk, w.mean, w.std, od, ad, m, rows); err != nil {
		return err
	}
	// Layer 0's input product from the start state, once: obsN·Wi[:od].
	if err := d.Gemm(true, true, n, h3, od, 1, e.obsN, od, w.wiObs, h3, 0, e.p0, n); err != nil {
		return err
	}
	for j := range m {
		nj := e.count[j] // the plans with k > j
		if nj == 0 {
			break
		}
		prev := 0
		if j > 0 {
			prev = 1
		}
		if err := e.gruStep(nj, n, e.h, j*n*ad, prev); err != nil {
			return err
		}
	}
	return nil
}

// gruStep queues one GRU step of every layer for the first nj plans of the
// states hs (per layer [.., H], feature-major, ld), in place, with layer
// 0's input from e.p0 and e.actN from element actOff (see roll_gru0);
// prev 0 is a first step from the zero state (hs not read).
func (e *Direct) gruStep(nj, ld int, hs []device.Buffer, actOff, prev int) error {
	c, w, d := e.cfg, e.w, e.d
	ad, h, h3 := c.ActDim, c.Hidden, 3*c.Hidden
	for l := range c.Layers {
		if prev != 0 {
			if err := d.Gemm(false, true, nj, h3, h, 1, hs[l], ld, w.wh[l], h3, 0, e.gh, ld); err != nil {
				return err
			}
		}
		if l == 0 {
			if err := d.Launch("roll_gru0", nj*h, e.p0, e.actN, w.wiAct, w.bi[0], e.gh, w.bh[0], hs[0], hs[0], h, ld, ad,
				actOff, prev); err != nil {
				return err
			}
			continue
		}
		if err := d.Gemm(false, true, nj, h3, h, 1, hs[l-1], ld, w.wi[l], h3, 0, e.gi, ld); err != nil {
			return err
		}
		if err := d.Launch("roll_gru", nj*h, e.gi, w.bi[l], e.gh, w.bh[l], hs[l], hs[l], h, ld, prev); err != nil {
			return err
		}
	}
	return nil
}

// head queues the head of n plans on their top GRU states x ([n, H],
// feature-major, ld n; overwritten): with drop the keep flags of plan i
// keyed by e.keys[i] and e.kk[i]; the ResBlocks, then the output layer
// with its bias in e.o [n, 2(od+1)] (row-major).
func (e *Direct) head(n int, x device.Buffer, drop bool, seed int64, step int) error {
	c, w, d := e.cfg, e.w, e.d
	h, dd := c.Hidden, c.d()
	dropFlag := 0
	if drop {
		dropFlag = 1
		if err := d.Launch("roll_drop_base", n, e.base, e.keys, e.kk, int32(uint32(seed)), int32(uint32(uint64(seed)>>32)),
			step, 0); err != nil {
			return err
		}
	}
	for b := range c.ResBlocks {
		if err := d.Gemm(false, true, n, h, h, 1, x, n, w.bw[b], h, 0, e.u, n); err != nil {
			return err
		}
		if err := d.Launch("roll_resblock", n, x, e.u, w.bb[b], w.bg[b], w.bt[b], e.base, h, n, b, e.thr, e.scale, w.eps,
			dropFlag); err != nil {
			return err
		}
	}
	// o [n, 2d] row-major, with the bias.
	if err := d.Gemm(false, true, 2*dd, n, h, 1, w.wout, 2*dd, x, n, 0, e.o, 2*dd); err != nil {
		return err
	}
	return d.Launch("bias_add", n*2*dd, e.o, w.bout, 2*dd)
}

// Close frees the device buffers (not the device); the Direct is unusable
// afterwards.
func (e *Direct) Close() error {
	err := freeAll(e.d, e.all)
	e.all, e.w, e.set = nil, nil, false
	return err
}
