package rolldev

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/scratch"
	"github.com/admpo/admpo/internal/stats"
)

// Compaction says when an Engine's window drops the rows that ended.
type Compaction int

// Compaction modes. Every mode gives the same transitions; they differ in
// the rows the window's kernels walk past.
const (
	// CompactLazy compacts when at most half the window's rows are alive.
	CompactLazy Compaction = iota
	// CompactAlways compacts after every step in which a row ended.
	CompactAlways
	// CompactNever keeps every row of the chunk in the window.
	CompactNever
)

// Engine rolls a policy out in an ADM on a device with ADM-Roll's direct
// or incremental evaluation (Mode: infer.ADMDirect's or
// infer.ADMIncremental's roll-out): the window of states and actions (and
// the incremental style's GRU states) stays on the device, the actor, the plans' forward, the sample,
// U^ADM's penalty, a DoneSpec's termination and the window's shift run
// there, and the host draws the random numbers in infer's order and
// uploads them, so that a seed and ChunkRows give infer's transitions
// (within float32 rounding). It is not safe for concurrent use.
type Engine struct {
	// Compaction is the window's compaction (a test knob; default lazy).
	Compaction Compaction
	// Mode is the plans' evaluation (default ModeAuto: direct without
	// U^ADM, incremental with it).
	Mode Mode

	d       device.Device
	cfg     ADMConfig
	maxRows int
	dir     *Direct      // the plans' forward, for up to maxRows·M plans
	act     *actor       // nil until SetActor
	inc     *incremental // ModeIncremental's cache; nil until its first roll-out

	// The window, twice (compaction gathers into the other): states [rows,
	// m, od] and actions [rows, m, ad]; lens [rows] its lengths.
	s, a                           [2]device.Buffer
	lens                           device.Buffer
	idx, slot, kd, done, cont, hd  device.Buffer // int32 per alive row (idx: gather indices)
	obs, noise, zero, eps, one     device.Buffer
	oneI                           device.Buffer // a placeholder int32 buffer (no DoneSpec ranges)
	all                            []device.Buffer
	hs, ha, heps, hnoise           []float32
	hlen, hidx, hslot, hkd, hplk   []int32
	hfin, hdone, hhd, hpos, hplanQ []int32
}

// New allocates an Engine on d for ADMs of configuration c and chunks of
// up to maxChunkRows start rows; SetADM and SetActor load the weights. Its
// forward has room for maxChunkRows·M plans (U^ADM's), about M times
// NewDirect's memory for maxChunkRows plans, besides the window and the
// actor's activations; ModeIncremental's first roll-out adds
// IncrementalBytesPerRow(c) per row (an error names the size when the
// device refuses it). Every buffer's 32-bit indexing must hold the
// [maxChunkRows·M, 3·Hidden] gates: about 710k rows at hopper's size.
func New(d device.Device, c ADMConfig, maxChunkRows int) (*Engine, error) {
	if err := c.check(maxChunkRows); err != nil {
		return nil, err
	}
	if maxChunkRows > device.MaxLen/c.M {
		return nil, fmt.Errorf("rolldev: new engine: %d rows of %d plans: %w", maxChunkRows, c.M, device.ErrRange)
	}
	e := &Engine{d: d, cfg: c, maxRows: maxChunkRows}
	fail := func(err error) (*Engine, error) {
		return nil, errors.Join(fmt.Errorf("rolldev: new engine: %w", err), e.Close())
	}
	var err error
	if e.dir, err = newDirect(d, c, maxChunkRows*c.M, false); err != nil {
		return fail(err)
	}
	n, m, od, ad := maxChunkRows, c.M, c.ObsDim, c.ActDim
	var errs []error
	buf := allocInto(d, &e.all, &errs)
	for i := range e.s {
		buf(&e.s[i], device.Float32, n*m*od)
		buf(&e.a[i], device.Float32, n*m*ad)
	}
	for _, b := range []*device.Buffer{&e.lens, &e.idx, &e.slot, &e.kd, &e.done, &e.cont, &e.hd} {
		buf(b, device.Int32, n)
	}
	buf(&e.obs, device.Float32, n*od)
	buf(&e.noise, device.Float32, n*ad)
	buf(&e.zero, device.Float32, n*ad)
	buf(&e.eps, device.Float32, n*(od+1))
	buf(&e.one, device.Float32, 1)
	buf(&e.oneI, device.Int32, 1)
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	return e, nil
}

// Config returns the model's configuration.
func (e *Engine) Config() ADMConfig { return e.cfg }

// MaxChunkRows returns the most start rows a chunk takes (RollConfig's
// ChunkRows default).
func (e *Engine) MaxChunkRows() int { return e.maxRows }

// SetADM uploads a trained ADM's weights (Direct.SetADM).
func (e *Engine) SetADM(w ADMWeights) error {
	if e.dir == nil {
		return fmt.Errorf("rolldev: set ADM: %w", device.ErrClosed)
	}
	return e.dir.SetADM(w)
}

// SetActor uploads the policy's weights, once for any number of
// roll-outs; an actor of other sizes replaces the previous one.
func (e *Engine) SetActor(w ActorWeights) error {
	if e.dir == nil {
		return fmt.Errorf("rolldev: set actor: %w", device.ErrClosed)
	}
	od, ad := e.cfg.ObsDim, e.cfg.ActDim
	if err := checkActor(w, od, ad); err != nil {
		return err
	}
	if e.act != nil && !slices.Equal(e.act.sizes, w.Sizes) {
		err := e.act.free(e.d)
		e.act = nil
		if err != nil {
			return fmt.Errorf("rolldev: set actor: %w", err)
		}
	}
	if e.act == nil {
		a, err := newActor(e.d, w.Sizes, e.maxRows, od, ad)
		if err != nil {
			return fmt.Errorf("rolldev: set actor: %w", err)
		}
		e.act = a
	}
	return e.act.upload(e.d, w)
}

// Rollout runs ADM-Roll from the start sequences with infer's semantics
// (infer.ADMDirect.Rollout with the same actor exported as an
// infer.Policy): chunks of at most cfg.ChunkRows start rows (0:
// MaxChunkRows), MC dropout's seed drawn first with rng.Int63() when the
// ADM has dropout, then per chunk and step for the alive rows in order the
// policy's noise (unless DeterministicPolicy), each row's k = 1+Intn(states)
// and the sample's od+1 Gaussian draws. A row ends when its next state is
// not finite, or cfg.Done (on the host, in row order, for finite states)
// or cfg.DoneSpec (on the device) says so. Transitions come in infer's row
// order.
func (e *Engine) Rollout(start *rollout.Start, cfg rollout.RollConfig, rng *rand.Rand) (*rollout.Transitions, error) {
	c := e.cfg
	m, od, ad := c.M, c.ObsDim, c.ActDim
	switch {
	case e.dir == nil:
		return nil, fmt.Errorf("rolldev: roll-out: %w", device.ErrClosed)
	case !e.dir.set:
		return nil, fmt.Errorf("rolldev: roll-out: no ADM weights (SetADM)")
	case e.act == nil || !e.act.set:
		return nil, fmt.Errorf("rolldev: roll-out: no actor (SetActor)")
	case cfg.Horizon <= 0:
		return nil, fmt.Errorf("rolldev: roll-out horizon must be positive, got %d", cfg.Horizon)
	case cfg.ChunkRows > e.maxRows:
		return nil, fmt.Errorf("rolldev: roll-out: %d chunk rows, the engine takes at most %d", cfg.ChunkRows, e.maxRows)
	}
	if err := checkStart(start, m, od, ad); err != nil {
		return nil, err
	}
	spec, err := e.uploadSpec(cfg.DoneSpec)
	if err != nil {
		return nil, err
	}
	defer spec.free(e.d)
	chunk := cfg.ChunkRows
	if chunk <= 0 {
		chunk = e.maxRows
	}
	r := roll{e: e, cfg: cfg, wantU: cfg.WantU || cfg.Penalty != 0, spec: spec, rng: rng}
	if r.inc, err = r.incremental(); err != nil {
		return nil, err
	}
	if c.Dropout > 0 {
		r.seed = rng.Int63()
	}
	r.out = rollout.NewTransitions(start.N*cfg.Horizon, od, ad)
	if cfg.WantMean {
		r.out.MeanNextObs = make([]float32, 0, start.N*cfg.Horizon*od)
	}
	for lo := 0; lo < start.N; lo += chunk {
		if cfg.Context != nil && cfg.Context.Err() != nil {
			return nil, fmt.Errorf("rolldev: roll-out stopped after %d of %d rows: %w", lo, start.N, cfg.Context.Err())
		}
		if err := r.chunk(start, lo, min(lo+chunk, start.N)); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

// checkStart reports whether s is a valid start batch for windows of m
// states of od values and actions of ad (infer's rules).
func checkStart(s *rollout.Start, m, od, ad int) error {
	if s == nil || s.N <= 0 {
		return fmt.Errorf("rolldev: roll-out: empty start batch")
	}
	if s.N > math.MaxInt32 || s.M != m || len(s.Len) != s.N || len(s.Obs) != s.N*m*od || (m > 1 && len(s.Act) != s.N*(m-1)*ad) {
		return fmt.Errorf("rolldev: roll-out: start batch of N=%d, M=%d with %d lengths, %d obs and %d action values, want M=%d, obs %d, act %d",
			s.N, s.M, len(s.Len), len(s.Obs), len(s.Act), m, od, ad)
	}
	for i, l := range s.Len {
		switch {
		case l < 1 || l > m:
			return fmt.Errorf("rolldev: roll-out: start row %d has %d states, want 1..%d", i, l, m)
		case !stats.Finite(s.Obs[i*m*od:(i*m+l)*od]) || m > 1 && !stats.Finite(s.Act[i*(m-1)*ad:(i*(m-1)+l-1)*ad]):
			return fmt.Errorf("rolldev: roll-out: start row %d has a NaN or Inf value", i)
		}
	}
	return nil
}

// devSpec is a DoneSpec on the device: per range its first and end
// dimensions and flags (ints) and its bounds (floats).
type devSpec struct {
	ints, floats device.Buffer
	nr, finite   int
	own          []device.Buffer
}

// uploadSpec validates s and uploads it (nil: never ends a row).
func (e *Engine) uploadSpec(s *rollout.DoneSpec) (*devSpec, error) {
	ds := &devSpec{ints: e.oneI, floats: e.one}
	if s == nil {
		return ds, nil
	}
	od := e.cfg.ObsDim
	if err := s.Validate(od); err != nil {
		return nil, fmt.Errorf("rolldev: roll-out: %w", err)
	}
	if s.Finite {
		ds.finite = 1
	}
	ds.nr = len(s.Ranges)
	if ds.nr == 0 {
		return ds, nil
	}
	ints, floats := make([]int32, 0, 3*ds.nr), make([]float32, 0, 2*ds.nr)
	for _, r := range s.Ranges {
		end := r.Dim + 1
		if r.ToEnd {
			end = od
		}
		flags := 0
		for i, f := range []bool{r.Abs, r.HasLo, r.HasHi, r.LoIncl, r.HiIncl} {
			if f {
				flags |= 1 << i
			}
		}
		ints = append(ints, int32(r.Dim), int32(end), int32(flags))
		floats = append(floats, r.Lo, r.Hi)
	}
	var err error
	if ds.ints, err = e.d.Alloc(device.Int32, len(ints)); err == nil {
		ds.own = append(ds.own, ds.ints)
		if ds.floats, err = e.d.Alloc(device.Float32, len(floats)); err == nil {
			ds.own = append(ds.own, ds.floats)
			if err = e.d.UploadInt32(ds.ints, ints); err == nil {
				err = e.d.Upload(ds.floats, floats)
			}
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rolldev: roll-out: DoneSpec: %w", err), ds.free(e.d))
	}
	return ds, nil
}

// free releases the spec's own buffers.
func (ds *devSpec) free(d device.Device) error {
	err := freeAll(d, ds.own)
	ds.own = nil
	return err
}

// allocInto returns a func that allocates a buffer of count values of
// type t on d into dst, appends it to all and the error to errs.
func allocInto(d device.Device, all *[]device.Buffer, errs *[]error) func(dst *device.Buffer, t device.Type, count int) {
	return func(dst *device.Buffer, t device.Type, count int) {
		b, err := d.Alloc(t, count)
		if err == nil {
			*all = append(*all, b)
		}
		*dst, *errs = b, append(*errs, err)
	}
}

// freeAll frees bufs on d, every one whatever the others give.
func freeAll(d device.Device, bufs []device.Buffer) error {
	var errs []error
	for _, b := range bufs {
		errs = append(errs, d.Free(b))
	}
	return errors.Join(errs...)
}

// roll is one Rollout's state.
type roll struct {
	e     *Engine
	cfg   rollout.RollConfig
	wantU bool
	inc   bool // ModeIncremental
	spec  *devSpec
	rng   *rand.Rand
	seed  int64 // MC dropout's
	out   *rollout.Transitions
}

// chunk rolls out start rows lo..hi-1 (rollChunk's loop in infer).
func (r *roll) chunk(start *rollout.Start, lo, hi int) error {
	e, cfg := r.e, r.cfg
	c, d := e.cfg, e.d
	m, od, ad := c.M, c.ObsDim, c.ActDim
	rows := hi - lo
	// The window: the start rows' states and actions (slot m-1 unused).
	e.ha = scratch.Resize(e.ha, rows*m*ad)
	clear(e.ha)
	e.hlen = scratch.Resize(e.hlen, rows)
	for q := range rows {
		i := lo + q
		e.hlen[q] = int32(start.Len[i])
		if m > 1 {
			copy(e.ha[q*m*ad:], start.Act[i*(m-1)*ad:(i*(m-1)+start.Len[i]-1)*ad])
		}
	}
	w := 0 // the window in use: e.s[w], e.a[w]
	if err := d.Upload(e.s[w], start.Obs[lo*m*od:hi*m*od]); err != nil {
		return fmt.Errorf("rolldev: roll-out: window: %w", err)
	}
	if err := d.Upload(e.a[w], e.ha); err != nil {
		return fmt.Errorf("rolldev: roll-out: window: %w", err)
	}
	if err := d.UploadInt32(e.lens, e.hlen); err != nil {
		return fmt.Errorf("rolldev: roll-out: window: %w", err)
	}
	if r.inc {
		if err := r.replay(w, rows); err != nil {
			return fmt.Errorf("rolldev: roll-out: the start windows' replay: %w", err)
		}
	}
	// alive[q]: the chunk row of alive row q; slot[q]: its window row; the
	// window has wr rows.
	alive := make([]int, rows)
	e.hslot = scratch.Resize(e.hslot, rows)
	for q := range alive {
		alive[q], e.hslot[q] = q, int32(q)
	}
	wr := rows
	for step := 0; step < cfg.Horizon && len(alive) > 0; step++ {
		n := len(alive)
		if err := r.step(step, lo, alive, w, wr); err != nil {
			return fmt.Errorf("rolldev: roll-out step %d: %w", step, err)
		}
		// The rows that continue, their lengths after the push and their
		// cached states (first: row q's first plan).
		k, first := 0, 0
		for q := range n {
			s := e.hslot[q]
			l := int(e.hlen[s])
			if e.hdone[q] == 0 {
				alive[k], e.hslot[k] = alive[q], s
				e.hlen[s] = min(e.hlen[s]+1, int32(m))
				if r.inc {
					e.inc.shiftCache(k, first, l, m)
				}
				k++
			}
			first += l
		}
		alive = alive[:k]
		if k == 0 || step+1 == cfg.Horizon {
			continue
		}
		if e.Compaction == CompactAlways && k < wr || e.Compaction == CompactLazy && 2*k <= wr {
			if err := r.compact(w, wr, k); err != nil {
				return fmt.Errorf("rolldev: roll-out step %d: compaction: %w", step, err)
			}
			w, wr = 1-w, k
		}
	}
	return nil
}

// compact gathers the k alive rows' window rows (e.hslot[:k]) of window w
// (wr rows) into the other window, in order, and makes them its rows
// 0..k-1.
func (r *roll) compact(w, wr, k int) error {
	e, d := r.e, r.e.d
	m, od, ad := e.cfg.M, e.cfg.ObsDim, e.cfg.ActDim
	if err := d.UploadInt32(e.idx, e.hslot[:k]); err != nil {
		return err
	}
	if err := d.Launch("gather_rows", k*m*od, e.s[1-w], e.s[w], e.idx, m*od, wr); err != nil {
		return err
	}
	if err := d.Launch("gather_rows", k*m*ad, e.a[1-w], e.a[w], e.idx, m*ad, wr); err != nil {
		return err
	}
	e.hidx = scratch.Resize(e.hidx, k)
	for q, s := range e.hslot[:k] {
		e.hidx[q] = e.hlen[s]
	}
	copy(e.hlen, e.hidx)
	for q := range k {
		e.hslot[q] = int32(q)
	}
	return d.UploadInt32(e.lens, e.hlen[:k])
}

// step runs one roll-out step of the n = len(alive) alive rows of the
// chunk starting at start row lo, over window w of wr rows, appends its
// transitions to r.out and leaves each row's done flag in e.hdone.
func (r *roll) step(step, lo int, alive []int, w, wr int) error {
	e, cfg, rng := r.e, r.cfg, r.rng
	c, d, dir := e.cfg, e.d, e.dir
	m, od, ad := c.M, c.ObsDim, c.ActDim
	n := len(alive)
	slot := e.hslot[:n]
	// The current states, gathered from the window.
	e.hidx = scratch.Resize(e.hidx, n)
	for q, s := range slot {
		e.hidx[q] = s*int32(m) + e.hlen[s] - 1
	}
	if err := d.UploadInt32(e.idx, e.hidx); err != nil {
		return err
	}
	if err := d.UploadInt32(e.slot, slot); err != nil {
		return err
	}
	if err := d.Launch("gather_rows", n*od, e.obs, e.s[w], e.idx, od, wr*m); err != nil {
		return err
	}
	// The policy's actions from its noise, set in the window.
	noise := e.zero
	if !cfg.DeterministicPolicy {
		e.hnoise = scratch.Resize(e.hnoise, n*ad)
		for i := range e.hnoise {
			e.hnoise[i] = float32(rng.NormFloat64())
		}
		if err := d.Upload(e.noise, e.hnoise); err != nil {
			return err
		}
		noise = e.noise
	}
	if err := e.act.forward(d, e.obs, noise, n); err != nil {
		return err
	}
	if err := d.Launch("roll_act", n, e.a[w], e.lens, e.slot, e.act.act, ad, m, wr); err != nil {
		return err
	}
	// Each row's k, then the sample's draws: every row's od state noises,
	// then the reward's.
	e.hkd = scratch.Resize(e.hkd, n)
	for q, s := range slot {
		e.hkd[q] = int32(1 + rng.Intn(int(e.hlen[s])))
	}
	e.heps = scratch.Resize(e.heps, n*(od+1))
	for i := range e.heps {
		e.heps[i] = float32(rng.NormFloat64())
	}
	if err := d.Upload(e.eps, e.heps); err != nil {
		return err
	}
	if err := d.UploadInt32(e.kd, e.hkd); err != nil {
		return err
	}
	drop := c.Dropout > 0
	var np int
	if r.inc {
		var err error
		if np, err = r.incPlans(step, lo, alive, w, wr, drop); err != nil {
			return err
		}
	} else if err := r.directPlans(step, lo, alive, w, wr, drop); err != nil {
		return err
	} else {
		np = len(e.hplk)
	}
	wantU := 0
	if r.wantU {
		wantU = 1
	}
	if err := d.Launch("roll_finish", n, dir.o, dir.zob, dir.w.mx, dir.w.mn, e.s[w], e.lens, e.slot, e.kd, dir.pidx,
		e.eps, dir.next, dir.rew, dir.uq, dir.mean, dir.fin, od, m, wr, np, wantU, 0, cfg.Penalty); err != nil {
		return err
	}
	out := r.out
	base := out.N
	out.Grow(n, od, ad)
	next := out.NextObs[base*od : (base+n)*od]
	if err := d.Download(next, dir.next); err != nil {
		return err
	}
	// Termination: a host Done func in row order on the finite next
	// states, then roll_done with the DoneSpec on the device.
	useHost := 0
	if cfg.Done != nil {
		useHost = 1
		e.hfin = scratch.Resize(e.hfin, n)
		if err := d.DownloadInt32(e.hfin, dir.fin); err != nil {
			return err
		}
		e.hhd = scratch.Resize(e.hhd, n)
		for q := range n {
			e.hhd[q] = 0
			if e.hfin[q] != 0 && cfg.Done(next[q*od:(q+1)*od]) {
				e.hhd[q] = 1
			}
		}
		if err := d.UploadInt32(e.hd, e.hhd); err != nil {
			return err
		}
	}
	sp := r.spec
	if err := d.Launch("roll_done", n, e.done, e.cont, dir.fin, dir.next, e.hd, sp.ints, sp.floats, od, sp.nr, sp.finite,
		useHost); err != nil {
		return err
	}
	if err := d.Launch("roll_push", n, e.s[w], e.a[w], e.lens, e.slot, dir.next, e.cont, od, ad, m, wr, 0); err != nil {
		return err
	}
	// The step's transitions, in row order.
	for _, dl := range []struct {
		dst []float32
		src device.Buffer
	}{
		{out.Obs[base*od : (base+n)*od], e.obs}, {out.Act[base*ad : (base+n)*ad], e.act.act},
		{out.Rew[base : base+n], dir.rew}, {out.Uncertainty[base : base+n], dir.uq},
	} {
		if err := d.Download(dl.dst, dl.src); err != nil {
			return err
		}
	}
	if cfg.WantMean {
		out.MeanNextObs = slices.Grow(out.MeanNextObs, n*od)[:(base+n)*od]
		if err := d.Download(out.MeanNextObs[base*od:], dir.mean); err != nil {
			return err
		}
	}
	e.hdone = scratch.Resize(e.hdone, n)
	if err := d.DownloadInt32(e.hdone, e.done); err != nil {
		return err
	}
	for q := range n {
		t := base + q
		out.Done[t] = e.hdone[q] != 0
		out.Step[t] = int32(step)
		out.Back[t] = e.hkd[q]
	}
	return nil
}

// Close frees the device buffers (not the device); the Engine is unusable
// afterwards.
func (e *Engine) Close() error {
	var errs []error
	for _, b := range e.all {
		errs = append(errs, e.d.Free(b))
	}
	if e.act != nil {
		errs = append(errs, e.act.free(e.d))
	}
	if e.dir != nil {
		errs = append(errs, e.dir.Close())
	}
	if e.inc != nil {
		errs = append(errs, e.inc.free(e.d))
	}
	e.all, e.act, e.dir, e.inc = nil, nil, nil, nil
	return errors.Join(errs...)
}

// directPlans queues step's plans in ModeDirect for the n alive rows
// (chunk rows alive, window rows e.hslot, drawn k e.hkd) over window w of
// wr rows: the drawn k's, or every k = 1..l of a row for U^ADM, sorted by
// k (e.hplk holds them) and run by the Direct's forward from their start
// states.
func (r *roll) directPlans(step, lo int, alive []int, w, wr int, drop bool) error {
	e := r.e
	dir, m := e.dir, e.cfg.M
	n := len(alive)
	slot := e.hslot[:n]
	e.hplk, e.hplanQ = e.hplk[:0], e.hplanQ[:0]
	for q, s := range slot {
		if !r.wantU {
			e.hplk, e.hplanQ = append(e.hplk, e.hkd[q]), append(e.hplanQ, int32(q))
			continue
		}
		for k := int32(1); k <= e.hlen[s]; k++ {
			e.hplk, e.hplanQ = append(e.hplk, k), append(e.hplanQ, int32(q))
		}
	}
	np := len(e.hplk)
	e.hpos = scratch.Resize(e.hpos, np)
	dir.sortByK(e.hplk, e.hpos)
	dir.hslot = scratch.Resize(dir.hslot, np)
	dir.hkk = scratch.Resize(dir.hkk, np)
	dir.hpidx = scratch.Resize(dir.hpidx, n*m)
	if drop {
		dir.hkeys = scratch.Resize(dir.hkeys, np)
	}
	for p, k := range e.hplk {
		i, q := e.hpos[p], e.hplanQ[p]
		dir.hslot[i], dir.hkk[i] = slot[q], k
		dir.hpidx[int(q)*m+int(k)-1] = i
		if drop {
			dir.hkeys[i] = int32(lo + alive[q])
		}
	}
	ups := []intUpload{{dir.slot, dir.hslot}, {dir.kk, dir.hkk}, {dir.pidx, dir.hpidx}}
	if drop {
		ups = append(ups, intUpload{dir.keys, dir.hkeys})
	}
	if err := uploadInts(e.d, ups); err != nil {
		return err
	}
	return dir.plans(np, e.s[w], e.a[w], e.lens, wr, drop, r.seed, step)
}

// intUpload is one host-to-device copy of int32 values.
type intUpload struct {
	dst device.Buffer
	src []int32
}

// uploadInts copies each upload's values in turn.
func uploadInts(d device.Device, ups []intUpload) error {
	for _, u := range ups {
		if err := d.UploadInt32(u.dst, u.src); err != nil {
			return err
		}
	}
	return nil
}
