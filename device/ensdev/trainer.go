package ensdev

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/device"
)

// penalty is the bounds' penalty coefficient (models.BoundsNodes.Penalty).
const penalty = 0.01

// Config sizes the ensemble (models.Ensemble's members) and the train step.
type Config struct {
	ObsDim, ActDim int
	Hidden         []int // every member's hidden widths (MBPO: 200, 200, 200, 200)
	Members        int
	Batch          int // rows per member per step
	// LR is Adam's learning rate, a float64 like models.Adam's (fits pass
	// float64 of their float32 rate): the step constants are formed in
	// float64 and rounded once.
	LR float64
	// Decay is the per-layer weight decay (len(Hidden)+1 values, input
	// layer first; models.EnsembleDecay), added as 0.5·wd·ΣW² to the loss;
	// nil for none.
	Decay []float64
	// Graph records the step's launches and products once (the second
	// Step) as a device graph and replays it from then on. It needs a
	// device.Capturer.
	Graph bool
}

func (c Config) in() int        { return c.ObsDim + c.ActDim }
func (c Config) d() int         { return c.ObsDim + 1 }
func (c Config) layers() int    { return len(c.Hidden) + 1 }
func (c Config) perMember() int { return 2*c.layers() + 2 }

// width is the output width of layer l.
func (c Config) width(l int) int {
	if l == len(c.Hidden) {
		return 2 * c.d()
	}
	return c.Hidden[l]
}

// fanIn is the input width of layer l.
func (c Config) fanIn(l int) int {
	if l == 0 {
		return c.in()
	}
	return c.Hidden[l-1]
}

// Sizes returns the number of values of every weight tensor, in the order
// of models' ensemble training graph's Params: per member, each layer's W
// [in, out] and B [out], then the bounds' Max [d] and Min [d], with d =
// ObsDim+1.
func (c Config) Sizes() []int {
	var s []int
	for range c.Members {
		for l := range c.layers() {
			s = append(s, c.fanIn(l)*c.width(l), c.width(l))
		}
		s = append(s, c.d(), c.d())
	}
	return s
}

func (c Config) check() error {
	if c.ObsDim < 1 || c.ActDim < 1 || len(c.Hidden) == 0 || c.Members < 1 || c.Batch < 1 {
		return fmt.Errorf("ensdev: invalid sizes obs %d, act %d, hidden %v, members %d, batch %d",
			c.ObsDim, c.ActDim, c.Hidden, c.Members, c.Batch)
	}
	for _, h := range c.Hidden {
		if h < 1 || c.Batch > device.MaxLen/h {
			return fmt.Errorf("ensdev: hidden sizes %v with batch %d", c.Hidden, c.Batch)
		}
	}
	if c.Decay != nil && len(c.Decay) != c.layers() {
		return fmt.Errorf("ensdev: %d weight decays for %d layers", len(c.Decay), c.layers())
	}
	if !(c.LR > 0) {
		return fmt.Errorf("ensdev: learning rate %v must be positive", c.LR)
	}
	return nil
}

// Batch is one train step's inputs on the host, per member as
// models.EnsembleGraph takes them: X[i] [Batch, ObsDim+ActDim] normalised,
// Target[i] [Batch, ObsDim+1], Weight[i] [Batch].
type Batch struct {
	X, Target, Weight [][]float32
}

// member is one member's inputs and loss buffers.
type member struct {
	x, target, weight, wsum device.Buffer
	loss, nllSum            device.Buffer // [2]: loss and NLL of the last step; their sums over steps
}

// Trainer trains an ensemble on a device. It is not safe for concurrent use.
type Trainer struct {
	cfg Config
	d   device.Device
	// params, grads and the Adam moments, in Sizes' order.
	params, grads, m, v []device.Buffer
	t                   int // Adam steps taken

	members []member
	// Scratch shared by the members, which run one after the other: each
	// hidden layer's pre-activation u, σ(u) and output [Batch, h_l], two
	// gradients [Batch, max h] used in turn, the output and its gradient
	// [Batch, 2d], the head's log-variance and bounds' terms [Batch, d]
	// and row losses [Batch].
	u, sig, act                           []device.Buffer
	gA, gB, o, dout, lv, tmax, tmin, rows device.Buffer
	zeros, ones                           device.Buffer // [Batch·max(h, 1)]: the swish's residual and mask, and sums
	k                                     device.Buffer // adam_k's constants [8]
	replay                                device.Replay
	all                                   []device.Buffer
}

// New allocates a trainer on d with zero weights (SetWeights sets them)
// and zero Adam moments.
func New(d device.Device, cfg Config) (*Trainer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Graph {
		if _, ok := d.(device.Capturer); !ok {
			return nil, fmt.Errorf("ensdev: graph: device %s cannot record graphs", d.Name())
		}
	}
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	cfg.Decay = append([]float64(nil), cfg.Decay...)
	tr := &Trainer{cfg: cfg, d: d}
	alloc := func(n int) (device.Buffer, error) {
		b, err := d.Alloc(device.Float32, n)
		if err == nil {
			tr.all = append(tr.all, b)
		}
		return b, err
	}
	fail := func(err error) (*Trainer, error) {
		_ = tr.Close()
		return nil, fmt.Errorf("ensdev: new: %w", err)
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
	B, d2 := cfg.Batch, cfg.d()
	maxH := 0
	for _, h := range cfg.Hidden {
		maxH = max(maxH, h)
	}
	type want struct {
		dst *device.Buffer
		n   int
	}
	ws := []want{{&tr.gA, B * maxH}, {&tr.gB, B * maxH}, {&tr.o, B * 2 * d2}, {&tr.dout, B * 2 * d2},
		{&tr.lv, B * d2}, {&tr.tmax, B * d2}, {&tr.tmin, B * d2}, {&tr.rows, B},
		{&tr.zeros, B * maxH}, {&tr.ones, B * max(maxH, d2)}, {&tr.k, 8}}
	tr.u, tr.sig, tr.act = make([]device.Buffer, len(cfg.Hidden)), make([]device.Buffer, len(cfg.Hidden)), make([]device.Buffer, len(cfg.Hidden))
	for l, h := range cfg.Hidden {
		ws = append(ws, want{&tr.u[l], B * h}, want{&tr.sig[l], B * h}, want{&tr.act[l], B * h})
	}
	tr.members = make([]member, cfg.Members)
	for i := range tr.members {
		mb := &tr.members[i]
		ws = append(ws, want{&mb.x, B * cfg.in()}, want{&mb.target, B * d2}, want{&mb.weight, B}, want{&mb.wsum, 1},
			want{&mb.loss, 2}, want{&mb.nllSum, 2})
	}
	for _, w := range ws {
		var err error
		if *w.dst, err = alloc(w.n); err != nil {
			return fail(err)
		}
	}
	if err := d.Launch("fill", tr.ones.Len(), tr.ones, float32(1)); err != nil {
		return fail(err)
	}
	return tr, nil
}

// Config returns the trainer's configuration.
func (tr *Trainer) Config() Config { return tr.cfg }

// SetLR sets the learning rate of the next steps.
func (tr *Trainer) SetLR(lr float64) { tr.cfg.LR = lr }

// upload copies host tensors into bufs, checking every size first.
func (tr *Trainer) upload(what string, bufs []device.Buffer, src [][]float32) error {
	if err := device.UploadAll(tr.d, bufs, src); err != nil {
		return fmt.Errorf("ensdev: %s: %w", what, err)
	}
	return nil
}

// download copies bufs into host tensors of the same sizes; it waits for
// the device.
func (tr *Trainer) download(what string, dst [][]float32, bufs []device.Buffer) error {
	if err := device.DownloadAll(tr.d, dst, bufs); err != nil {
		return fmt.Errorf("ensdev: %s: %w", what, err)
	}
	return nil
}

// SetWeights uploads the weights w (Sizes' order).
func (tr *Trainer) SetWeights(w [][]float32) error { return tr.upload("set weights", tr.params, w) }

// WeightsInto downloads the weights into dst (Sizes' order; e.g. views of
// a models.Ensemble's slices, updated in place); it waits for the device.
func (tr *Trainer) WeightsInto(dst [][]float32) error { return tr.download("weights", dst, tr.params) }

// OptimInto downloads the Adam state into o's tensors (Sizes' order; e.g.
// a models.Adam's M and V, updated in place) and step count; it waits for
// the device.
func (tr *Trainer) OptimInto(o *device.AdamState) error {
	if err := device.DownloadAdam(tr.d, o, tr.m, tr.v); err != nil {
		return fmt.Errorf("ensdev: %w", err)
	}
	o.T = tr.t
	return nil
}

// SetOptim uploads an Adam state (e.g. a checkpoint's models.Adam M, V, T).
func (tr *Trainer) SetOptim(o device.AdamState) error {
	if err := device.UploadAdam(tr.d, tr.m, tr.v, o); err != nil {
		return fmt.Errorf("ensdev: set optimiser state: %w", err)
	}
	tr.t = o.T
	return nil
}

// Upload copies a step's batches to the device for the next Step.
func (tr *Trainer) Upload(b Batch) error {
	nm, B := tr.cfg.Members, tr.cfg.Batch
	if len(b.X) != nm || len(b.Target) != nm || len(b.Weight) != nm {
		return fmt.Errorf("ensdev: upload: %d/%d/%d member batches, want %d", len(b.X), len(b.Target), len(b.Weight), nm)
	}
	for i, mb := range tr.members {
		for _, x := range []struct {
			name string
			dst  device.Buffer
			src  []float32
		}{{"x", mb.x, b.X[i]}, {"target", mb.target, b.Target[i]}, {"weight", mb.weight, b.Weight[i]}} {
			if len(x.src) != x.dst.Len() {
				return fmt.Errorf("ensdev: upload: member %d %s has %d values, want %d", i, x.name, len(x.src), x.dst.Len())
			}
			if err := tr.d.Upload(x.dst, x.src); err != nil {
				return fmt.Errorf("ensdev: upload: member %d %s: %w", i, x.name, err)
			}
		}
		// Σw as the product wᵀ·1.
		if err := tr.d.Gemm(false, false, 1, 1, B, 1, mb.weight, 1, tr.ones, B, 0, mb.wsum, 1); err != nil {
			return fmt.Errorf("ensdev: upload: member %d weight sum: %w", i, err)
		}
	}
	return nil
}

// Step queues one train step of every member on the uploaded batches:
// forward, backward and Adam (one Run and Adam.Step of models' training
// graph). It reads nothing back; each member's loss and NLL are added to
// its NLLSums.
func (tr *Trainer) Step() error {
	tr.t++
	if err := tr.d.Upload(tr.k, device.AdamK(tr.t, tr.cfg.LR)); err != nil {
		tr.t--
		return fmt.Errorf("ensdev: step %d: adam constants: %w", tr.t+1, err)
	}
	if err := tr.replay.Run(tr.d, tr.cfg.Graph, tr.queue); err != nil {
		return fmt.Errorf("ensdev: step %d: %w", tr.t, err)
	}
	return nil
}

func (tr *Trainer) queue() error {
	for i := range tr.members {
		if err := tr.member(i); err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	return nil
}

// colSum queues out [cols] = the column sums of x [Batch, cols] as the
// product xᵀ·1.
func (tr *Trainer) colSum(x, out device.Buffer, cols int) error {
	B := tr.cfg.Batch
	return tr.d.Gemm(false, false, cols, 1, B, 1, x, cols, tr.ones, B, 0, out, cols)
}

// member queues member i's forward pass, loss, backward pass and Adam step.
func (tr *Trainer) member(i int) error {
	d, c, mb := tr.d, tr.cfg, tr.members[i]
	B, d2, L := c.Batch, c.d(), c.layers()
	p0 := i * c.perMember()
	w := func(l int) device.Buffer { return tr.params[p0+2*l] }
	input := func(l int) device.Buffer {
		if l == 0 {
			return mb.x
		}
		return tr.act[l-1]
	}
	// Forward: hidden layers u = h·W, h = swish(u + b) (the residual 0,
	// the mask 1), then the output layer and the head.
	for l := range L - 1 {
		k, h := c.fanIn(l), c.width(l)
		if err := d.Gemm(false, false, h, B, k, 1, w(l), h, input(l), k, 0, tr.u[l], h); err != nil {
			return fmt.Errorf("layer %d forward: %w", l, err)
		}
		if err := d.Launch("adm_swish_res", B*h, tr.u[l], tr.params[p0+2*l+1], tr.zeros, tr.ones, tr.sig[l],
			tr.act[l], h); err != nil {
			return fmt.Errorf("layer %d forward: %w", l, err)
		}
	}
	last, k := L-1, c.fanIn(L-1)
	mx, mn := tr.params[p0+2*L], tr.params[p0+2*L+1]
	if err := d.Gemm(false, false, 2*d2, B, k, 1, w(last), 2*d2, input(last), k, 0, tr.o, 2*d2); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("bias_add", B*2*d2, tr.o, tr.params[p0+2*last+1], 2*d2); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("adm_head", B, tr.o, mx, mn, mb.target, mb.weight, mb.wsum, tr.lv, tr.dout, tr.tmax, tr.tmin,
		tr.rows, d2); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	// The loss with the bounds before this step's Adam, added to the sums.
	if err := d.Launch("adm_loss", 1, tr.rows, mb.wsum, mx, mn, mb.loss, B, d2, float32(penalty)); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	if err := d.Launch("axpy", 2, float32(1), mb.loss, mb.nllSum); err != nil {
		return fmt.Errorf("loss sums: %w", err)
	}
	// Backward: the output layer, the bounds (the head's terms plus the
	// penalty's ±0.01), then the hidden layers.
	g := func(l int) device.Buffer { return tr.grads[p0+2*l] }
	if err := d.Gemm(false, true, 2*d2, k, B, 1, tr.dout, 2*d2, input(last), k, 0, g(last), 2*d2); err != nil {
		return fmt.Errorf("output layer weight gradient: %w", err)
	}
	if err := tr.colSum(tr.dout, tr.grads[p0+2*last+1], 2*d2); err != nil {
		return fmt.Errorf("output layer bias gradient: %w", err)
	}
	for j, x := range []struct {
		terms device.Buffer
		coef  float32
	}{{tr.tmax, penalty}, {tr.tmin, -penalty}} {
		gb := tr.grads[p0+2*L+j]
		if err := tr.colSum(x.terms, gb, d2); err != nil {
			return fmt.Errorf("bounds gradient: %w", err)
		}
		if err := d.Launch("axpy", d2, x.coef, tr.ones, gb); err != nil {
			return fmt.Errorf("bounds gradient: %w", err)
		}
	}
	cur, next := tr.gA, tr.gB
	if L > 1 {
		// dh [B, h] = dout·Wᵀ.
		if err := d.Gemm(true, false, k, B, 2*d2, 1, w(last), 2*d2, tr.dout, 2*d2, 0, cur, k); err != nil {
			return fmt.Errorf("output layer input gradient: %w", err)
		}
	}
	for l := L - 2; l >= 0; l-- {
		kin, h := c.fanIn(l), c.width(l)
		if err := d.Launch("ens_swish_grad", B*h, cur, tr.u[l], tr.sig[l]); err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
		if err := d.Gemm(false, true, h, kin, B, 1, cur, h, input(l), kin, 0, g(l), h); err != nil {
			return fmt.Errorf("layer %d weight gradient: %w", l, err)
		}
		if err := tr.colSum(cur, tr.grads[p0+2*l+1], h); err != nil {
			return fmt.Errorf("layer %d bias gradient: %w", l, err)
		}
		if l > 0 {
			if err := d.Gemm(true, false, kin, B, h, 1, w(l), h, cur, h, 0, next, kin); err != nil {
				return fmt.Errorf("layer %d input gradient: %w", l, err)
			}
			cur, next = next, cur
		}
	}
	// Weight decay 0.5·wd·ΣW²: its gradient wd·W (2·float32(0.5·wd), as
	// models' SumSquares forms it) added to each W's.
	for l, wd := range c.Decay {
		if wd == 0 {
			continue
		}
		coef := 2 * float32(0.5*wd)
		if err := d.Launch("axpy", w(l).Len(), coef, w(l), g(l)); err != nil {
			return fmt.Errorf("layer %d weight decay: %w", l, err)
		}
	}
	for j := p0; j < p0+c.perMember(); j++ {
		if err := d.Launch("adam_k", tr.params[j].Len(), tr.params[j], tr.grads[j], tr.m[j], tr.v[j], tr.k); err != nil {
			return fmt.Errorf("adam, tensor %d: %w", j, err)
		}
	}
	return nil
}

// Losses returns the last step's loss of each member without the weight
// decay (NLL + 0.01·ΣMax - 0.01·ΣMin, with the bounds before the step) and
// its NLL (models.EnsembleGraph.LossValue's); it waits for the device.
func (tr *Trainer) Losses() (loss, nll []float32, err error) {
	if tr.t == 0 {
		return nil, nil, errors.New("ensdev: losses: no step yet")
	}
	for i, mb := range tr.members {
		var v [2]float32
		if err := tr.d.Download(v[:], mb.loss); err != nil {
			return nil, nil, fmt.Errorf("ensdev: losses: member %d: %w", i, err)
		}
		loss, nll = append(loss, v[0]), append(nll, v[1])
	}
	return loss, nll, nil
}

// NLLSums downloads each member's NLL summed over the steps since
// SetNLLSums (or New); it waits for the device.
func (tr *Trainer) NLLSums() ([]float64, error) {
	s := make([]float64, len(tr.members))
	for i, mb := range tr.members {
		var v [2]float32
		if err := tr.d.Download(v[:], mb.nllSum); err != nil {
			return nil, fmt.Errorf("ensdev: nll sums: member %d: %w", i, err)
		}
		s[i] = float64(v[1])
	}
	return s, nil
}

// SetNLLSums sets the sums NLLSums continues from (rounded to float32,
// which they are kept in), one per member.
func (tr *Trainer) SetNLLSums(s []float64) error {
	if len(s) != len(tr.members) {
		return fmt.Errorf("ensdev: set nll sums: %d values for %d members", len(s), len(tr.members))
	}
	for i, mb := range tr.members {
		if err := tr.d.Upload(mb.nllSum, []float32{0, float32(s[i])}); err != nil {
			return fmt.Errorf("ensdev: set nll sums: member %d: %w", i, err)
		}
	}
	return nil
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
