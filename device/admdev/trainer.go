package admdev

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/device"
)

// Config sizes the model (models.ADMConfig's fields of the same names) and
// the train step.
type Config struct {
	ObsDim, ActDim int
	Hidden         int // GRU and ResBlock width
	Layers         int // stacked GRU layers
	ResBlocks      int
	M              int // unrolled steps
	Batch          int // start states per step
	// LR is Adam's learning rate, a float64 like models.Adam's (fits pass
	// float64 of their float32 rate): the step constants are formed in
	// float64 and rounded once.
	LR float64
	// Dropout is the ResBlocks' dropout probability (models.ADMDropout);
	// 0 trains without dropout.
	Dropout float64
	// Eps is the ResBlocks' LayerNorm epsilon (1e-5).
	Eps float32
	// Graph records the step's launches and products once (the second
	// Step) as a device graph and replays it from then on: one launch per
	// step on cuda instead of about 180. It needs a device.Capturer.
	Graph bool
}

// penalty is the bounds' penalty coefficient (models.BoundsNodes.Penalty).
const penalty = 0.01

// golden is SplitMix64's increment: one draw advances the state by it.
const golden = 0x9e3779b97f4a7c15

func (c Config) in() int   { return c.ObsDim + c.ActDim }
func (c Config) d() int    { return c.ObsDim + 1 }
func (c Config) rows() int { return c.M * c.Batch }

// Sizes returns the number of values of every weight tensor, in the order
// of models' ADM training graph's Params (models.ADM.TrainedTensors): see
// the package function Sizes.
func (c Config) Sizes() []int { return Sizes(c.ObsDim, c.ActDim, c.Hidden, c.Layers, c.ResBlocks) }

// Sizes returns the number of values of every weight tensor of an ADM with
// od observation and ad action dimensions, hidden units, layers GRU layers
// and blocks ResBlocks, in the order of models' ADM training graph's Params
// (models.ADM.TrainedTensors): per GRU layer Wi [in,3H], Bi [3H], Wh
// [H,3H], Bh [3H] (in = od+ad for layer 0, else H); per ResBlock W [H,H],
// B [H], Gamma [H], Beta [H]; the output layer's W [H,2d], B [2d]; the
// bounds' Max [d], Min [d], with d = od+1.
func Sizes(od, ad, hidden, layers, blocks int) []int {
	h, h3, d := hidden, 3*hidden, od+1
	var s []int
	for l := range layers {
		in := h
		if l == 0 {
			in = od + ad
		}
		s = append(s, in*h3, h3, h*h3, h3)
	}
	for range blocks {
		s = append(s, h*h, h, h, h)
	}
	return append(s, h*2*d, 2*d, d, d)
}

func (c Config) check() error {
	if c.ObsDim < 1 || c.ActDim < 1 || c.Hidden < 1 || c.Layers < 1 || c.ResBlocks < 0 || c.M < 1 || c.Batch < 1 {
		return fmt.Errorf("admdev: invalid sizes %+v", c)
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		return fmt.Errorf("admdev: dropout %v outside [0,1)", c.Dropout)
	}
	if !(c.Eps > 0) || !(c.LR > 0) {
		return fmt.Errorf("admdev: eps %v and learning rate %v must be positive", c.Eps, c.LR)
	}
	if c.rows()*3*c.Hidden > device.MaxLen || c.rows()*c.in() > device.MaxLen {
		return fmt.Errorf("admdev: %d rows of %d units exceed a buffer: %w", c.rows(), 3*c.Hidden, device.ErrRange)
	}
	return nil
}

// Batch is one train step's inputs on the host, as models.ADMGraph takes
// them: X [M·Batch, ObsDim+ActDim] normalised, Target [M·Batch, ObsDim+1],
// Weight [M·Batch].
type Batch struct {
	X, Target, Weight []float32
}

// gru is one GRU layer's saved forward pass.
type gru struct {
	gates, ghn, y device.Buffer // [R,3H], [R,H], [R,H]
}

// block is one ResBlock's saved forward pass.
type block struct {
	u, sig, xhat, inv, out, mask device.Buffer // [R,H] but inv [R]
}

// Trainer trains an ADM on a device. It is not safe for concurrent use.
type Trainer struct {
	cfg Config
	d   device.Device
	// params, grads and the Adam moments, in Sizes' order.
	params, grads, m, v []device.Buffer
	t                   int    // Adam steps taken
	steps               int    // train steps taken
	rng                 uint64 // the dropout stream's SplitMix64 state

	x, target, weight, wsum device.Buffer
	grus                    []gru
	blocks                  []block
	// GRU scratch: all steps' x·Wi and pre-activation gradients [R,3H]
	// (dgh's rows rotated: step t ≥ 1 at rows (t-1)·B, step 0 last), one
	// step's h·Wh [B,3H], state [B,H], state gradient [B,H] and dgh [B,3H].
	gi, dgi, dgh, gh, hcur, dh, dghs device.Buffer
	// Head scratch: two [R,H] gradients used in turn, du and prod [R,H],
	// the output layer's output and gradient [R,2d], the clamped
	// log-variance, the bounds' gradient terms [R,d], the loss's row terms
	// [R], the mean (for Outputs) and the loss and NLL [2].
	gA, gB, du, prod, o, dout, lv, tmax, tmin, rowloss, mean, loss device.Buffer
	// The bounds before the last step's Adam (for the loss's penalty).
	maxSnap, minSnap device.Buffer
	ones             device.Buffer // [max(R,H)] of 1, for row and column sums as products
	// The step's Adam constants for adam_k [8] and each ResBlock's dropout
	// stream state (int32 lo, hi per block), uploaded before every step so
	// that a recorded graph replays with the current ones.
	kAdam, maskState device.Buffer
	replay           device.Replay // the recorded step (Config.Graph)
	// LayerNorm scratch: two [R,H] terms and two [R] row sums.
	tA, tB, statA, statB device.Buffer
	nllSum               device.Buffer // [1]: Σ over steps of Σw·NLL (see NLLSum)
	all                  []device.Buffer
}

// New allocates a trainer on d with zero weights (SetWeights sets them),
// zero Adam moments and the dropout stream's state seed, as
// models.NewADMTrainGraph(m, batch, dropout, seed) starts it.
func New(d device.Device, cfg Config, seed int64) (*Trainer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Graph {
		if _, ok := d.(device.Capturer); !ok {
			return nil, fmt.Errorf("admdev: graph: device %s cannot record graphs", d.Name())
		}
	}
	tr := &Trainer{cfg: cfg, d: d, rng: uint64(seed)}
	alloc := func(n int) (device.Buffer, error) {
		b, err := d.Alloc(device.Float32, n)
		if err == nil {
			tr.all = append(tr.all, b)
		}
		return b, err
	}
	fail := func(err error) (*Trainer, error) {
		_ = tr.Close()
		return nil, fmt.Errorf("admdev: new: %w", err)
	}
	for _, n := range cfg.Sizes() {
		for _, dst := range []*[]device.Buffer{&tr.params, &tr.grads, &tr.m, &tr.v} {
			b, err := alloc(n)
			if err != nil {
				return fail(err)
			}
			*dst = append(*dst, b)
		}
	}
	R, B, H, d2 := cfg.rows(), cfg.Batch, cfg.Hidden, cfg.d()
	tr.grus = make([]gru, cfg.Layers)
	tr.blocks = make([]block, cfg.ResBlocks)
	type want struct {
		dst *device.Buffer
		n   int
	}
	ws := []want{{&tr.x, R * cfg.in()}, {&tr.target, R * d2}, {&tr.weight, R}, {&tr.wsum, 1},
		{&tr.gi, R * 3 * H}, {&tr.dgi, R * 3 * H}, {&tr.dgh, R * 3 * H}, {&tr.gh, B * 3 * H}, {&tr.hcur, B * H},
		{&tr.dh, B * H}, {&tr.dghs, B * 3 * H},
		{&tr.gA, R * H}, {&tr.gB, R * H}, {&tr.du, R * H}, {&tr.prod, R * H}, {&tr.o, R * 2 * d2}, {&tr.dout, R * 2 * d2},
		{&tr.lv, R * d2}, {&tr.tmax, R * d2}, {&tr.tmin, R * d2}, {&tr.rowloss, R}, {&tr.mean, R * d2}, {&tr.loss, 2},
		{&tr.maxSnap, d2}, {&tr.minSnap, d2}, {&tr.ones, max(R, H)}, {&tr.nllSum, 1},
		{&tr.tA, R * H}, {&tr.tB, R * H}, {&tr.statA, R}, {&tr.statB, R}, {&tr.kAdam, 8}}
	for l := range tr.grus {
		g := &tr.grus[l]
		ws = append(ws, want{&g.gates, R * 3 * H}, want{&g.ghn, R * H}, want{&g.y, R * H})
	}
	for i := range tr.blocks {
		b := &tr.blocks[i]
		ws = append(ws, want{&b.u, R * H}, want{&b.sig, R * H}, want{&b.xhat, R * H}, want{&b.inv, R},
			want{&b.out, R * H}, want{&b.mask, R * H})
	}
	for _, w := range ws {
		var err error
		if *w.dst, err = alloc(w.n); err != nil {
			return fail(err)
		}
	}
	var err error
	if tr.maskState, err = d.Alloc(device.Int32, 2*max(1, cfg.ResBlocks)); err != nil {
		return fail(err)
	}
	tr.all = append(tr.all, tr.maskState)
	if err := d.Launch("fill", tr.ones.Len(), tr.ones, float32(1)); err != nil {
		return fail(err)
	}
	if cfg.Dropout == 0 {
		for i, b := range tr.blocks {
			if err := d.Launch("fill", b.mask.Len(), b.mask, float32(1)); err != nil {
				return fail(fmt.Errorf("block %d mask: %w", i, err))
			}
		}
	}
	return tr, nil
}

// Config returns the trainer's configuration.
func (tr *Trainer) Config() Config { return tr.cfg }

// Steps returns the number of train steps taken.
func (tr *Trainer) Steps() int { return tr.steps }

// SetLR sets the learning rate of the next steps.
func (tr *Trainer) SetLR(lr float64) { tr.cfg.LR = lr }

// DropoutState is the dropout stream's state (models.ADMGraph's
// DropoutState after as many runs).
func (tr *Trainer) DropoutState() uint64 { return tr.rng }

// SetDropoutState restores a state DropoutState (or models.ADMGraph's)
// returned.
func (tr *Trainer) SetDropoutState(s uint64) { tr.rng = s }

// upload copies host tensors into bufs, checking every size first.
func (tr *Trainer) upload(what string, bufs []device.Buffer, src [][]float32) error {
	if err := device.UploadAll(tr.d, bufs, src); err != nil {
		return fmt.Errorf("admdev: %s: %w", what, err)
	}
	return nil
}

// download copies bufs into host tensors of the same sizes; it waits for
// the device.
func (tr *Trainer) download(what string, dst [][]float32, bufs []device.Buffer) error {
	if err := device.DownloadAll(tr.d, dst, bufs); err != nil {
		return fmt.Errorf("admdev: %s: %w", what, err)
	}
	return nil
}

// SetWeights uploads the weights w (Sizes' order, e.g. the slices of
// models.ADM.TrainedTensors).
func (tr *Trainer) SetWeights(w [][]float32) error { return tr.upload("set weights", tr.params, w) }

// WeightsInto downloads the weights into dst (Sizes' order; e.g.
// models.ADM.TrainedTensors, which updates the model in place); it waits
// for the device.
func (tr *Trainer) WeightsInto(dst [][]float32) error { return tr.download("weights", dst, tr.params) }

// OptimInto downloads the Adam state into o's tensors (Sizes' order; e.g.
// a models.Adam's M and V, updated in place) and step count; it waits for
// the device.
func (tr *Trainer) OptimInto(o *device.AdamState) error {
	if err := device.DownloadAdam(tr.d, o, tr.m, tr.v); err != nil {
		return fmt.Errorf("admdev: %w", err)
	}
	o.T = tr.t
	return nil
}

// SetOptim uploads an Adam state (e.g. a checkpoint's models.Adam M, V, T).
func (tr *Trainer) SetOptim(o device.AdamState) error {
	if err := device.UploadAdam(tr.d, tr.m, tr.v, o); err != nil {
		return fmt.Errorf("admdev: set optimiser state: %w", err)
	}
	tr.t = o.T
	return nil
}

// Upload copies a batch to the device for the next steps.
func (tr *Trainer) Upload(b Batch) error {
	for _, x := range []struct {
		name string
		dst  device.Buffer
		src  []float32
	}{{"x", tr.x, b.X}, {"target", tr.target, b.Target}, {"weight", tr.weight, b.Weight}} {
		if len(x.src) != x.dst.Len() {
			return fmt.Errorf("admdev: upload: %s has %d values, want %d", x.name, len(x.src), x.dst.Len())
		}
		if err := tr.d.Upload(x.dst, x.src); err != nil {
			return fmt.Errorf("admdev: upload %s: %w", x.name, err)
		}
	}
	if err := tr.colSum(tr.weight, tr.wsum, 1); err != nil {
		return fmt.Errorf("admdev: upload: weight sum: %w", err)
	}
	return nil
}

// Step queues one train step on the uploaded batch: fresh dropout masks,
// forward, backward and Adam (one Run and Adam.Step of models' training
// graph). It reads nothing back.
func (tr *Trainer) Step() error {
	if err := tr.step(); err != nil {
		return fmt.Errorf("admdev: step %d: %w", tr.steps+1, err)
	}
	tr.steps++
	return nil
}

// Param indices in Sizes' order.
func (tr *Trainer) gruParam(l, k int) int   { return 4*l + k }                 // Wi, Bi, Wh, Bh
func (tr *Trainer) blockParam(b, k int) int { return 4*(tr.cfg.Layers+b) + k } // W, B, Gamma, Beta
func (tr *Trainer) outParam(k int) int      { return 4*(tr.cfg.Layers+tr.cfg.ResBlocks) + k }

func (tr *Trainer) step() error {
	if err := tr.stepInputs(); err != nil {
		return err
	}
	return tr.replay.Run(tr.d, tr.cfg.Graph, tr.queue)
}

// stepInputs counts the step's Adam step and uploads its constants and the
// ResBlocks' dropout stream states, advancing the stream as models' graph
// does (ceil(n/4) draws per mask).
func (tr *Trainer) stepInputs() error {
	tr.t++
	if err := tr.d.Upload(tr.kAdam, device.AdamK(tr.t, tr.cfg.LR)); err != nil {
		return fmt.Errorf("adam constants: %w", err)
	}
	if tr.cfg.Dropout == 0 || len(tr.blocks) == 0 {
		return nil
	}
	st := make([]int32, 0, 2*len(tr.blocks))
	for _, b := range tr.blocks {
		st = append(st, int32(uint32(tr.rng)), int32(uint32(tr.rng>>32)))
		tr.rng += uint64((b.mask.Len()+3)/4) * golden
	}
	if err := tr.d.UploadInt32(tr.maskState, st); err != nil {
		return fmt.Errorf("dropout states: %w", err)
	}
	return nil
}

// queue queues one step's launches and products (nothing else, so that it
// can be recorded as a graph).
func (tr *Trainer) queue() error {
	if err := tr.masks(); err != nil {
		return err
	}
	top, err := tr.forwardGRU()
	if err != nil {
		return err
	}
	if err := tr.forwardHead(top); err != nil {
		return err
	}
	// Σw·NLL = Σ rowloss / d, added to the running sum.
	R, d2 := tr.cfg.rows(), tr.cfg.d()
	if err := tr.d.Gemm(false, false, 1, 1, R, float32(1/float64(d2)), tr.rowloss, 1, tr.ones, R, 1, tr.nllSum, 1); err != nil {
		return fmt.Errorf("nll sum: %w", err)
	}
	gy, err := tr.backwardHead(top)
	if err != nil {
		return err
	}
	if err := tr.backwardGRU(gy); err != nil {
		return err
	}
	return tr.adam()
}

// masks draws every ResBlock's dropout mask from its state in maskState.
func (tr *Trainer) masks() error {
	p := tr.cfg.Dropout
	if p == 0 {
		return nil
	}
	keep, thr := float32(1/(1-p)), int32(p*65536)
	for i, b := range tr.blocks {
		if err := tr.d.Launch("dropout_mask", b.mask.Len(), b.mask, tr.maskState, i, thr, keep); err != nil {
			return fmt.Errorf("block %d dropout mask: %w", i, err)
		}
	}
	return nil
}

// colSum queues out [cols] = the column sums of x [R, cols] as the product
// xᵀ·1: a GPU's BLAS reduces the R rows in parallel (device's col_sum runs
// one thread per column down all rows, slow for R = M·Batch).
func (tr *Trainer) colSum(x, out device.Buffer, cols int) error {
	R := tr.cfg.rows()
	return tr.d.Gemm(false, false, cols, 1, R, 1, x, cols, tr.ones, R, 0, out, cols)
}

// rowSum queues out [R] = the row sums of x [R, cols] as the product x·1.
func (tr *Trainer) rowSum(x, out device.Buffer, cols int) error {
	R := tr.cfg.rows()
	return tr.d.Gemm(true, false, R, 1, cols, 1, x, cols, tr.ones, cols, 0, out, R)
}

// forwardGRU queues the GRU layers and returns the top layer's output.
func (tr *Trainer) forwardGRU() (device.Buffer, error) {
	d, c := tr.d, tr.cfg
	R, B, H := c.rows(), c.Batch, c.Hidden
	in, inDim := tr.x, c.in()
	for l, g := range tr.grus {
		wi, bi, wh, bh := tr.params[tr.gruParam(l, 0)], tr.params[tr.gruParam(l, 1)], tr.params[tr.gruParam(l, 2)], tr.params[tr.gruParam(l, 3)]
		// GI [R,3H] = X·Wi for every step at once.
		if err := d.Gemm(false, false, 3*H, R, inDim, 1, wi, 3*H, in, inDim, 0, tr.gi, 3*H); err != nil {
			return nil, fmt.Errorf("gru %d input product: %w", l, err)
		}
		for t := range c.M {
			prev := 0
			if t > 0 {
				prev = 1
				// GH [B,3H] = h_{t-1}·Wh.
				if err := d.Gemm(false, false, 3*H, B, H, 1, wh, 3*H, tr.hcur, H, 0, tr.gh, 3*H); err != nil {
					return nil, fmt.Errorf("gru %d step %d product: %w", l, t, err)
				}
			}
			if err := d.Launch("adm_gru_fwd", B*H, tr.gi, bi, tr.gh, bh, g.gates, g.ghn, g.y, tr.hcur, H, t*B, prev); err != nil {
				return nil, fmt.Errorf("gru %d step %d: %w", l, t, err)
			}
		}
		in, inDim = g.y, H
	}
	return in, nil
}

// forwardHead queues the ResBlocks, the output layer and the head.
func (tr *Trainer) forwardHead(h device.Buffer) error {
	d, c := tr.d, tr.cfg
	R, H, d2 := c.rows(), c.Hidden, c.d()
	for i, b := range tr.blocks {
		w, bias, gamma, beta := tr.params[tr.blockParam(i, 0)], tr.params[tr.blockParam(i, 1)], tr.params[tr.blockParam(i, 2)], tr.params[tr.blockParam(i, 3)]
		if err := d.Gemm(false, false, H, R, H, 1, w, H, h, H, 0, b.u, H); err != nil {
			return fmt.Errorf("block %d product: %w", i, err)
		}
		// out = w = h + mask ⊙ swish(u + bias), then LayerNorm in place:
		// the row means and variances as products with ones.
		for _, k := range []struct {
			name string
			args []any
			sum  [2]device.Buffer
		}{
			{"adm_swish_res", []any{b.u, bias, h, b.mask, b.sig, b.out, H}, [2]device.Buffer{b.out, tr.statA}},
			{"adm_center", []any{b.out, tr.statA, b.xhat, tr.tA, H}, [2]device.Buffer{tr.tA, tr.statB}},
			{"adm_norm", []any{b.xhat, tr.statB, gamma, beta, b.inv, b.out, H, c.Eps}, [2]device.Buffer{}},
		} {
			if err := d.Launch(k.name, R*H, k.args...); err != nil {
				return fmt.Errorf("block %d: %w", i, err)
			}
			if k.sum[0] != nil {
				if err := tr.rowSum(k.sum[0], k.sum[1], H); err != nil {
					return fmt.Errorf("block %d: %w", i, err)
				}
			}
		}
		h = b.out
	}
	w, bias := tr.params[tr.outParam(0)], tr.params[tr.outParam(1)]
	mx, mn := tr.params[tr.outParam(2)], tr.params[tr.outParam(3)]
	if err := d.Gemm(false, false, 2*d2, R, H, 1, w, 2*d2, h, H, 0, tr.o, 2*d2); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("bias_add", R*2*d2, tr.o, bias, 2*d2); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("adm_head", R, tr.o, mx, mn, tr.target, tr.weight, tr.wsum, tr.lv, tr.dout, tr.tmax, tr.tmin,
		tr.rowloss, d2); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	// The penalty of the loss reads the bounds before this step's Adam.
	for _, x := range [][2]device.Buffer{{tr.maxSnap, mx}, {tr.minSnap, mn}} {
		if err := d.Launch("take_cols", d2, x[0], x[1], d2, d2, 0, 0); err != nil {
			return fmt.Errorf("bounds: %w", err)
		}
	}
	return nil
}

// headInput is the input of ResBlock i (the GRU's output for the first).
func (tr *Trainer) headInput(top device.Buffer, i int) device.Buffer {
	if i == 0 {
		return top
	}
	return tr.blocks[i-1].out
}

// backwardHead queues the head's backward pass and returns the gradient of
// the GRU's output.
func (tr *Trainer) backwardHead(top device.Buffer) (device.Buffer, error) {
	d, c := tr.d, tr.cfg
	R, H, d2 := c.rows(), c.Hidden, c.d()
	nb := len(tr.blocks)
	h := tr.headInput(top, nb)
	gw, gb := tr.grads[tr.outParam(0)], tr.grads[tr.outParam(1)]
	// dW [H,2d] = hᵀ·dout, db = Σ dout, then the bounds'.
	if err := d.Gemm(false, true, 2*d2, H, R, 1, tr.dout, 2*d2, h, H, 0, gw, 2*d2); err != nil {
		return nil, fmt.Errorf("output layer weight gradient: %w", err)
	}
	if err := tr.colSum(tr.dout, gb, 2*d2); err != nil {
		return nil, fmt.Errorf("output layer bias gradient: %w", err)
	}
	// The bounds': the column sums of the head's terms plus the penalty's
	// +0.01 (Max) and -0.01 (Min).
	for i, x := range []struct {
		terms device.Buffer
		coef  float32
	}{{tr.tmax, penalty}, {tr.tmin, -penalty}} {
		g := tr.grads[tr.outParam(2+i)]
		if err := tr.colSum(x.terms, g, d2); err != nil {
			return nil, fmt.Errorf("bounds gradient: %w", err)
		}
		if err := d.Launch("axpy", d2, x.coef, tr.ones, g); err != nil {
			return nil, fmt.Errorf("bounds gradient: %w", err)
		}
	}
	// dh [R,H] = dout·Wᵀ.
	cur, next := tr.gA, tr.gB
	if err := d.Gemm(true, false, H, R, 2*d2, 1, tr.params[tr.outParam(0)], 2*d2, tr.dout, 2*d2, 0, cur, H); err != nil {
		return nil, fmt.Errorf("output layer input gradient: %w", err)
	}
	for i := nb - 1; i >= 0; i-- {
		b := tr.blocks[i]
		in := tr.headInput(top, i)
		w := tr.params[tr.blockParam(i, 0)]
		if err := d.Launch("adm_norm_terms", R*H, cur, tr.params[tr.blockParam(i, 2)], b.xhat, tr.tA, tr.tB, tr.prod, H); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		if err := tr.rowSum(tr.tA, tr.statA, H); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		if err := tr.rowSum(tr.tB, tr.statB, H); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		if err := d.Launch("adm_res_grad", R*H, tr.tA, tr.statA, tr.statB, b.xhat, b.inv, b.u, b.sig, b.mask, next, tr.du, H); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		for _, x := range [][2]device.Buffer{{tr.prod, tr.grads[tr.blockParam(i, 2)]}, {cur, tr.grads[tr.blockParam(i, 3)]},
			{tr.du, tr.grads[tr.blockParam(i, 1)]}} {
			if err := tr.colSum(x[0], x[1], H); err != nil {
				return nil, fmt.Errorf("block %d gradient: %w", i, err)
			}
		}
		if err := d.Gemm(false, true, H, H, R, 1, tr.du, H, in, H, 0, tr.grads[tr.blockParam(i, 0)], H); err != nil {
			return nil, fmt.Errorf("block %d weight gradient: %w", i, err)
		}
		// The input's gradient: the residual's (next) plus du·Wᵀ.
		if err := d.Gemm(true, false, H, R, H, 1, w, H, tr.du, H, 1, next, H); err != nil {
			return nil, fmt.Errorf("block %d input gradient: %w", i, err)
		}
		cur, next = next, cur
	}
	return cur, nil
}

// backwardGRU queues the GRU layers' backward pass from gy, the gradient of
// the top layer's output (one of gA, gB; the other is free).
func (tr *Trainer) backwardGRU(gy device.Buffer) error {
	d, c := tr.d, tr.cfg
	R, B, H := c.rows(), c.Batch, c.Hidden
	free := tr.gA
	if gy == tr.gA {
		free = tr.gB
	}
	for l := len(tr.grus) - 1; l >= 0; l-- {
		g := tr.grus[l]
		wi, wh := tr.params[tr.gruParam(l, 0)], tr.params[tr.gruParam(l, 2)]
		if err := d.Launch("fill", B*H, tr.dh, float32(0)); err != nil {
			return fmt.Errorf("gru %d: %w", l, err)
		}
		for t := c.M - 1; t >= 0; t-- {
			prev := 0
			if t > 0 {
				prev = 1
			}
			drow := ((t + c.M - 1) % c.M) * B
			if err := d.Launch("adm_gru_bwd", B*H, g.gates, g.ghn, g.y, gy, tr.dh, tr.dgi, tr.dgh, tr.dghs, H, t*B, drow, prev); err != nil {
				return fmt.Errorf("gru %d step %d: %w", l, t, err)
			}
			if t > 0 {
				// dh += dgh_t·Whᵀ.
				if err := d.Gemm(true, false, H, B, 3*H, 1, wh, 3*H, tr.dghs, 3*H, 1, tr.dh, H); err != nil {
					return fmt.Errorf("gru %d step %d state gradient: %w", l, t, err)
				}
			}
		}
		in, inDim := tr.x, c.in()
		if l > 0 {
			in, inDim = tr.grus[l-1].y, H
			// The lower layer's output gradient dX [R,H] = dGI·Wiᵀ.
			if err := d.Gemm(true, false, H, R, 3*H, 1, wi, 3*H, tr.dgi, 3*H, 0, free, H); err != nil {
				return fmt.Errorf("gru %d input gradient: %w", l, err)
			}
		}
		gwi, gbi, gwh, gbh := tr.grads[tr.gruParam(l, 0)], tr.grads[tr.gruParam(l, 1)], tr.grads[tr.gruParam(l, 2)], tr.grads[tr.gruParam(l, 3)]
		if err := d.Gemm(false, true, 3*H, inDim, R, 1, tr.dgi, 3*H, in, inDim, 0, gwi, 3*H); err != nil {
			return fmt.Errorf("gru %d Wi gradient: %w", l, err)
		}
		if err := tr.colSum(tr.dgi, gbi, 3*H); err != nil {
			return fmt.Errorf("gru %d Bi gradient: %w", l, err)
		}
		// dWh = Σ_{t≥1} h_{t-1}ᵀ·dgh_t: y's first R-B rows against dgh's
		// (rotated) first R-B rows.
		if err := d.Gemm(false, true, 3*H, H, R-B, 1, tr.dgh, 3*H, g.y, H, 0, gwh, 3*H); err != nil {
			return fmt.Errorf("gru %d Wh gradient: %w", l, err)
		}
		if err := tr.colSum(tr.dgh, gbh, 3*H); err != nil {
			return fmt.Errorf("gru %d Bh gradient: %w", l, err)
		}
		gy, free = free, gy
	}
	return nil
}

// adam queues one Adam step of every weight with the constants in kAdam
// (formed in float64 and rounded once, as models.Adam does; stepInputs).
func (tr *Trainer) adam() error {
	for i, p := range tr.params {
		if err := tr.d.Launch("adam_k", p.Len(), p, tr.grads[i], tr.m[i], tr.v[i], tr.kAdam); err != nil {
			return fmt.Errorf("adam, tensor %d: %w", i, err)
		}
	}
	return nil
}

// NLLSum downloads the running sum, over the steps since SetNLLSum (or
// New), of each step's NLL times its weight sum Σw: a fit's epoch divides
// it by the Σw of its steps for the epoch's mean train NLL without reading
// every step's loss back. It waits for the device.
func (tr *Trainer) NLLSum() (float64, error) {
	var v [1]float32
	if err := tr.d.Download(v[:], tr.nllSum); err != nil {
		return 0, fmt.Errorf("admdev: nll sum: %w", err)
	}
	return float64(v[0]), nil
}

// SetNLLSum sets the running sum NLLSum continues from (rounded to
// float32, which it is kept in).
func (tr *Trainer) SetNLLSum(v float64) error {
	if err := tr.d.Upload(tr.nllSum, []float32{float32(v)}); err != nil {
		return fmt.Errorf("admdev: set nll sum: %w", err)
	}
	return nil
}

// Loss returns the last step's loss and NLL (models.ADMGraph.LossValue);
// it waits for the device.
func (tr *Trainer) Loss() (loss, nll float32, err error) {
	if tr.steps == 0 {
		return 0, 0, errors.New("admdev: loss: no step yet")
	}
	c := tr.cfg
	if err := tr.d.Launch("adm_loss", 1, tr.rowloss, tr.wsum, tr.maxSnap, tr.minSnap, tr.loss, c.rows(), c.d(),
		float32(penalty)); err != nil {
		return 0, 0, fmt.Errorf("admdev: loss: %w", err)
	}
	var v [2]float32
	if err := tr.d.Download(v[:], tr.loss); err != nil {
		return 0, 0, fmt.Errorf("admdev: loss: %w", err)
	}
	return v[0], v[1], nil
}

// Outputs downloads the last step's mean and soft-clamped log-variance
// ([M·Batch, ObsDim+1] each, before its Adam step, as
// models.ADMGraph.Outputs); it waits for the device.
func (tr *Trainer) Outputs() (mean, logvar []float32, err error) {
	if tr.steps == 0 {
		return nil, nil, errors.New("admdev: outputs: no step yet")
	}
	R, d2 := tr.cfg.rows(), tr.cfg.d()
	if err := tr.d.Launch("take_cols", R*d2, tr.mean, tr.o, d2, 2*d2, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("admdev: outputs: %w", err)
	}
	mean, logvar = make([]float32, R*d2), make([]float32, R*d2)
	if err := tr.d.Download(mean, tr.mean); err != nil {
		return nil, nil, fmt.Errorf("admdev: outputs: %w", err)
	}
	if err := tr.d.Download(logvar, tr.lv); err != nil {
		return nil, nil, fmt.Errorf("admdev: outputs: %w", err)
	}
	return mean, logvar, nil
}

// Close frees the trainer's buffers and graph.
func (tr *Trainer) Close() error {
	var errs []error
	errs = append(errs, tr.replay.Free())
	for _, b := range tr.all {
		errs = append(errs, tr.d.Free(b))
	}
	tr.all = nil
	return errors.Join(errs...)
}
