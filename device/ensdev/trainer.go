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
		if h < 1 {
			return fmt.Errorf("ensdev: hidden sizes %v", c.Hidden)
		}
	}
	// Every member's rows of a layer's input or output, and every member's
	// weights of a layer, are one buffer.
	for l := range c.layers() {
		in, out := c.fanIn(l), c.width(l)
		if c.Batch > device.MaxLen/max(in, out)/c.Members || in > device.MaxLen/out/c.Members {
			return fmt.Errorf("ensdev: hidden sizes %v with batch %d and %d members exceed a buffer",
				c.Hidden, c.Batch, c.Members)
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

// Trainer trains an ensemble on a device. It is not safe for concurrent use.
//
// Every tensor the members have each of is one buffer holding all
// members' in turn (member i's at i times one member's size): a layer's
// weights, its activations and gradients, the inputs. So each layer's
// forward product, weight-gradient product, input-gradient product and
// bias sums are one device.GemmStridedBatched for all members, and the
// element-wise kernels, the weight decay and Adam run over all members
// in one launch each.
type Trainer struct {
	cfg Config
	d   device.Device
	// params, grads and the Adam moments: one buffer per tensor of a
	// member (the first perMember entries of Sizes: W_0, b_0, ..., Max,
	// Min), each with that tensor of every member.
	params, grads, m, v []device.Buffer
	size                []int // one member's size of each of them
	t                   int   // Adam steps taken

	// The members' inputs [Members·Batch, ·], Σw [Members], and the last
	// step's loss and NLL and their sums over steps [Members·2].
	x, target, weight, wsum, loss, nllSum device.Buffer
	// Scratch, each buffer with all members' blocks in turn: each hidden
	// layer's pre-activation u, σ(u) and output [Batch, h_l], two
	// gradients [Batch, max h] used in turn, the output and its gradient
	// [Batch, 2d], the head's log-variance and bounds' terms [Batch, d]
	// and row losses [Batch].
	u, sig, act                           []device.Buffer
	gA, gB, o, dout, lv, tmax, tmin, rows device.Buffer
	ones                                  device.Buffer // [max(Batch, Members·d)]: sums and the penalty's gradient
	k                                     device.Buffer // adam_k's constants [8]
	replay                                device.Replay
	all                                   []device.Buffer
	// Host staging of Upload (one member after another, as the device
	// holds them) and of the weight and Adam state copies.
	hx, htarget, hweight []float32
	hstack               [][]float32
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
	M := cfg.Members
	tr.size = cfg.Sizes()[:cfg.perMember()]
	for _, n := range tr.size {
		for _, dst := range []*[]device.Buffer{&tr.params, &tr.grads, &tr.m, &tr.v} {
			b, err := alloc(M * n)
			if err != nil {
				return fail(err)
			}
			*dst = append(*dst, b)
		}
		tr.hstack = append(tr.hstack, make([]float32, M*n))
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
	ws := []want{{&tr.x, M * B * cfg.in()}, {&tr.target, M * B * d2}, {&tr.weight, M * B}, {&tr.wsum, M},
		{&tr.loss, 2 * M}, {&tr.nllSum, 2 * M},
		{&tr.gA, M * B * maxH}, {&tr.gB, M * B * maxH}, {&tr.o, M * B * 2 * d2}, {&tr.dout, M * B * 2 * d2},
		{&tr.lv, M * B * d2}, {&tr.tmax, M * B * d2}, {&tr.tmin, M * B * d2}, {&tr.rows, M * B},
		{&tr.ones, max(B, M*d2)}, {&tr.k, 8}}
	tr.u, tr.sig, tr.act = make([]device.Buffer, len(cfg.Hidden)), make([]device.Buffer, len(cfg.Hidden)), make([]device.Buffer, len(cfg.Hidden))
	for l, h := range cfg.Hidden {
		ws = append(ws, want{&tr.u[l], M * B * h}, want{&tr.sig[l], M * B * h}, want{&tr.act[l], M * B * h})
	}
	for _, w := range ws {
		var err error
		if *w.dst, err = alloc(w.n); err != nil {
			return fail(err)
		}
	}
	tr.hx, tr.htarget, tr.hweight = make([]float32, tr.x.Len()), make([]float32, tr.target.Len()), make([]float32, tr.weight.Len())
	if err := d.Launch("fill", tr.ones.Len(), tr.ones, float32(1)); err != nil {
		return fail(err)
	}
	return tr, nil
}

// Config returns the trainer's configuration.
func (tr *Trainer) Config() Config { return tr.cfg }

// SetLR sets the learning rate of the next steps.
func (tr *Trainer) SetLR(lr float64) { tr.cfg.LR = lr }

// checkTensors reports whether ts are Sizes' tensors.
func (tr *Trainer) checkTensors(ts [][]float32) error {
	sizes := tr.cfg.Sizes()
	if len(ts) != len(sizes) {
		return fmt.Errorf("%d tensors, want %d", len(ts), len(sizes))
	}
	for i, n := range sizes {
		if len(ts[i]) != n {
			return fmt.Errorf("tensor %d has %d values, want %d", i, len(ts[i]), n)
		}
	}
	return nil
}

// stack copies the checked tensors ts (Sizes' order) into tr.hstack, the
// layout of the device's buffers: tensor j of member i at i·size[j] of
// hstack[j].
func (tr *Trainer) stack(ts [][]float32) [][]float32 {
	per := tr.cfg.perMember()
	for i := range tr.cfg.Members {
		for j, n := range tr.size {
			copy(tr.hstack[j][i*n:(i+1)*n], ts[i*per+j])
		}
	}
	return tr.hstack
}

// unstack copies tr.hstack into the checked tensors ts (Sizes' order).
func (tr *Trainer) unstack(ts [][]float32) {
	per := tr.cfg.perMember()
	for i := range tr.cfg.Members {
		for j, n := range tr.size {
			copy(ts[i*per+j], tr.hstack[j][i*n:(i+1)*n])
		}
	}
}

// upload copies host tensors in Sizes' order into bufs (laid out as
// params), checking every size first.
func (tr *Trainer) upload(bufs []device.Buffer, src [][]float32) error {
	if err := tr.checkTensors(src); err != nil {
		return err
	}
	return device.UploadAll(tr.d, bufs, tr.stack(src))
}

// download copies bufs (laid out as params) into host tensors in Sizes'
// order, checking every size first; it waits for the device.
func (tr *Trainer) download(dst [][]float32, bufs []device.Buffer) error {
	if err := tr.checkTensors(dst); err != nil {
		return err
	}
	if err := device.DownloadAll(tr.d, tr.hstack, bufs); err != nil {
		return err
	}
	tr.unstack(dst)
	return nil
}

// SetWeights uploads the weights w (Sizes' order).
func (tr *Trainer) SetWeights(w [][]float32) error {
	if err := tr.upload(tr.params, w); err != nil {
		return fmt.Errorf("ensdev: set weights: %w", err)
	}
	return nil
}

// WeightsInto downloads the weights into dst (Sizes' order; e.g. views of
// a models.Ensemble's slices, updated in place); it waits for the device.
func (tr *Trainer) WeightsInto(dst [][]float32) error {
	if err := tr.download(dst, tr.params); err != nil {
		return fmt.Errorf("ensdev: weights: %w", err)
	}
	return nil
}

// OptimInto downloads the Adam state into o's tensors (Sizes' order; e.g.
// a models.Adam's M and V, updated in place) and step count; it waits for
// the device.
func (tr *Trainer) OptimInto(o *device.AdamState) error {
	for _, x := range []struct {
		name string
		ts   [][]float32
		bufs []device.Buffer
	}{{"m", o.M, tr.m}, {"v", o.V, tr.v}} {
		if err := tr.download(x.ts, x.bufs); err != nil {
			return fmt.Errorf("ensdev: adam %s: %w", x.name, err)
		}
	}
	o.T = tr.t
	return nil
}

// SetOptim uploads an Adam state (e.g. a checkpoint's models.Adam M, V, T)
// after checking all of it.
func (tr *Trainer) SetOptim(o device.AdamState) error {
	if o.T < 0 {
		return fmt.Errorf("ensdev: set optimiser state: %d steps", o.T)
	}
	for _, x := range []struct {
		name string
		ts   [][]float32
	}{{"m", o.M}, {"v", o.V}} {
		if err := tr.checkTensors(x.ts); err != nil {
			return fmt.Errorf("ensdev: set optimiser state: adam %s: %w", x.name, err)
		}
	}
	if err := tr.upload(tr.m, o.M); err != nil {
		return fmt.Errorf("ensdev: set optimiser state: adam m: %w", err)
	}
	if err := tr.upload(tr.v, o.V); err != nil {
		return fmt.Errorf("ensdev: set optimiser state: adam v: %w", err)
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
	inputs := []struct {
		name string
		dst  device.Buffer
		host []float32
		src  [][]float32
	}{{"x", tr.x, tr.hx, b.X}, {"target", tr.target, tr.htarget, b.Target}, {"weight", tr.weight, tr.hweight, b.Weight}}
	for _, x := range inputs {
		for i, s := range x.src {
			if n := x.dst.Len() / nm; len(s) != n {
				return fmt.Errorf("ensdev: upload: member %d %s has %d values, want %d", i, x.name, len(s), n)
			}
		}
	}
	for _, x := range inputs {
		n := x.dst.Len() / nm
		for i, s := range x.src {
			copy(x.host[i*n:], s)
		}
		if err := tr.d.Upload(x.dst, x.host); err != nil {
			return fmt.Errorf("ensdev: upload: %s: %w", x.name, err)
		}
	}
	// Each member's Σw as the product wᵀ·1.
	if err := tr.d.GemmStridedBatched(false, false, 1, 1, B, 1, tr.weight, 1, B, tr.ones, B, 0, 0, tr.wsum, 1, 1,
		nm); err != nil {
		return fmt.Errorf("ensdev: upload: weight sums: %w", err)
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

// gemm queues the product C_i = op(A_i)·op(B_i) of every member i, whose
// A_i, B_i and C_i lie strideA, strideB and strideC elements apart
// (column-major, so a row-major [rows, cols] matrix has ld cols).
func (tr *Trainer) gemm(transA, transB bool, m, n, k int, a device.Buffer, lda, strideA int, b device.Buffer,
	ldb, strideB int, c device.Buffer, ldc, strideC int) error {
	return tr.d.GemmStridedBatched(transA, transB, m, n, k, 1, a, lda, strideA, b, ldb, strideB, 0, c, ldc, strideC,
		tr.cfg.Members)
}

// colSum queues out [Members, cols] = the column sums of each member's x
// [Batch, cols] as the products xᵀ·1.
func (tr *Trainer) colSum(x, out device.Buffer, cols int) error {
	B := tr.cfg.Batch
	return tr.gemm(false, false, cols, 1, B, x, cols, B*cols, tr.ones, B, 0, out, cols, cols)
}

// queue queues every member's forward pass, loss, backward pass and Adam
// step, each layer's for all members at once.
func (tr *Trainer) queue() error {
	d, c := tr.d, tr.cfg
	M, B, d2, L := c.Members, c.Batch, c.d(), c.layers()
	w := func(l int) device.Buffer { return tr.params[2*l] }
	bias := func(l int) device.Buffer { return tr.params[2*l+1] }
	g := func(l int) device.Buffer { return tr.grads[2*l] }
	input := func(l int) device.Buffer {
		if l == 0 {
			return tr.x
		}
		return tr.act[l-1]
	}
	// Forward: hidden layers u = h·W, h = swish(u + b), then the output
	// layer and the head.
	for l := range L - 1 {
		k, h := c.fanIn(l), c.width(l)
		if err := tr.gemm(false, false, h, B, k, w(l), h, k*h, input(l), k, B*k, tr.u[l], h, B*h); err != nil {
			return fmt.Errorf("layer %d forward: %w", l, err)
		}
		if err := d.Launch("ens_swish", M*B*h, tr.u[l], bias(l), tr.sig[l], tr.act[l], h, B); err != nil {
			return fmt.Errorf("layer %d forward: %w", l, err)
		}
	}
	last, k, o2 := L-1, c.fanIn(L-1), 2*d2
	mx, mn := tr.params[2*L], tr.params[2*L+1]
	if err := tr.gemm(false, false, o2, B, k, w(last), o2, k*o2, input(last), k, B*k, tr.o, o2, B*o2); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("ens_bias_add", M*B*o2, tr.o, bias(last), o2, B); err != nil {
		return fmt.Errorf("output layer: %w", err)
	}
	if err := d.Launch("ens_head", M*B, tr.o, mx, mn, tr.target, tr.weight, tr.wsum, tr.lv, tr.dout, tr.tmax, tr.tmin,
		tr.rows, d2, B); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	// The loss with the bounds before this step's Adam, added to the sums.
	if err := d.Launch("ens_loss", M, tr.rows, tr.wsum, mx, mn, tr.loss, B, d2, float32(penalty)); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	if err := d.Launch("axpy", 2*M, float32(1), tr.loss, tr.nllSum); err != nil {
		return fmt.Errorf("loss sums: %w", err)
	}
	// Backward: the output layer, the bounds (the head's terms plus the
	// penalty's ±0.01), then the hidden layers.
	if err := tr.gemm(false, true, o2, k, B, tr.dout, o2, B*o2, input(last), k, B*k, g(last), o2, k*o2); err != nil {
		return fmt.Errorf("output layer weight gradient: %w", err)
	}
	if err := tr.colSum(tr.dout, tr.grads[2*last+1], o2); err != nil {
		return fmt.Errorf("output layer bias gradient: %w", err)
	}
	for j, x := range []struct {
		terms device.Buffer
		coef  float32
	}{{tr.tmax, penalty}, {tr.tmin, -penalty}} {
		gb := tr.grads[2*L+j]
		if err := tr.colSum(x.terms, gb, d2); err != nil {
			return fmt.Errorf("bounds gradient: %w", err)
		}
		if err := d.Launch("axpy", M*d2, x.coef, tr.ones, gb); err != nil {
			return fmt.Errorf("bounds gradient: %w", err)
		}
	}
	cur, next := tr.gA, tr.gB
	if L > 1 {
		// dh [B, h] = dout·Wᵀ.
		if err := tr.gemm(true, false, k, B, o2, w(last), o2, k*o2, tr.dout, o2, B*o2, cur, k, B*k); err != nil {
			return fmt.Errorf("output layer input gradient: %w", err)
		}
	}
	for l := L - 2; l >= 0; l-- {
		kin, h := c.fanIn(l), c.width(l)
		if err := d.Launch("ens_swish_grad", M*B*h, cur, tr.u[l], tr.sig[l]); err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
		if err := tr.gemm(false, true, h, kin, B, cur, h, B*h, input(l), kin, B*kin, g(l), h, kin*h); err != nil {
			return fmt.Errorf("layer %d weight gradient: %w", l, err)
		}
		if err := tr.colSum(cur, tr.grads[2*l+1], h); err != nil {
			return fmt.Errorf("layer %d bias gradient: %w", l, err)
		}
		if l > 0 {
			if err := tr.gemm(true, false, kin, B, h, w(l), h, kin*h, cur, h, B*h, next, kin, B*kin); err != nil {
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
	for j := range tr.params {
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
	v := make([]float32, 2*tr.cfg.Members)
	if err := tr.d.Download(v, tr.loss); err != nil {
		return nil, nil, fmt.Errorf("ensdev: losses: %w", err)
	}
	for i := range tr.cfg.Members {
		loss, nll = append(loss, v[2*i]), append(nll, v[2*i+1])
	}
	return loss, nll, nil
}

// NLLSums downloads each member's NLL summed over the steps since
// SetNLLSums (or New); it waits for the device.
func (tr *Trainer) NLLSums() ([]float64, error) {
	v := make([]float32, 2*tr.cfg.Members)
	if err := tr.d.Download(v, tr.nllSum); err != nil {
		return nil, fmt.Errorf("ensdev: nll sums: %w", err)
	}
	s := make([]float64, tr.cfg.Members)
	for i := range s {
		s[i] = float64(v[2*i+1])
	}
	return s, nil
}

// SetNLLSums sets the sums NLLSums continues from (rounded to float32,
// which they are kept in), one per member.
func (tr *Trainer) SetNLLSums(s []float64) error {
	if len(s) != tr.cfg.Members {
		return fmt.Errorf("ensdev: set nll sums: %d values for %d members", len(s), tr.cfg.Members)
	}
	v := make([]float32, 2*len(s))
	for i, x := range s {
		v[2*i+1] = float32(x)
	}
	if err := tr.d.Upload(tr.nllSum, v); err != nil {
		return fmt.Errorf("ensdev: set nll sums: %w", err)
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
