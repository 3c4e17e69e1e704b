package device

import (
	"fmt"
	"sort"
)

// Kind is the kind of a kernel parameter.
type Kind uint8

// Parameter kinds. Launch takes a Buffer for FloatBuf and IntBuf, an int32
// or int for Int, and a float32 for Float.
const (
	FloatBuf Kind = iota + 1
	IntBuf
	Int
	Float
)

func (k Kind) String() string {
	switch k {
	case FloatBuf:
		return "float32 buffer"
	case IntBuf:
		return "int32 buffer"
	case Int:
		return "int32"
	case Float:
		return "float32"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Param is one kernel parameter after n.
type Param struct {
	Name string
	Kind Kind
}

// Kernel describes a kernel of device/kernels.
type Kernel struct {
	Name   string
	Params []Param
	// check reports a size mismatch of valid-kinded arguments.
	check func(n int, a args) error
}

// args are a launch's arguments after their kinds were checked: buffers,
// int32 and float32 values.
type args struct {
	v []any
	p []Param
}

func (a args) int(i int) int { return int(a.v[i].(int32)) }
func (a args) len(i int) int { return a.v[i].(Buffer).Len() }

var kernels = map[string]Kernel{}

func def(name string, check func(n int, a args) error, params ...Param) {
	kernels[name] = Kernel{Name: name, Params: params, check: check}
}

func fb(name string) Param { return Param{name, FloatBuf} }
func ib(name string) Param { return Param{name, IntBuf} }
func in(name string) Param { return Param{name, Int} }
func fl(name string) Param { return Param{name, Float} }

// need returns a check that buffer parameters bufs each hold at least n
// elements.
func need(bufs ...int) func(n int, a args) error {
	return func(n int, a args) error {
		for _, i := range bufs {
			if a.len(i) < n {
				return fmt.Errorf("%s has %d elements, needs %d: %w", a.p[i].Name, a.len(i), n, ErrRange)
			}
		}
		return nil
	}
}

// rowsOf checks a row-major [n/cols, cols] launch with cols at argument ci.
func rowsOf(n int, a args, ci int) error {
	cols := a.int(ci)
	if cols < 1 || n%cols != 0 {
		return fmt.Errorf("n=%d is not a multiple of cols=%d: %w", n, cols, ErrArgs)
	}
	return nil
}

func init() {
	def("fill", need(0), fb("x"), fl("v"))
	def("scale", need(0), fb("x"), fl("a"))
	def("axpy", need(1, 2), fl("a"), fb("x"), fb("y"))
	def("polyak", need(0, 1), fb("dst"), fb("src"), fl("tau"))
	def("gather_rows", func(n int, a args) error {
		if err := rowsOf(n, a, 3); err != nil {
			return err
		}
		cols, srcRows := a.int(3), a.int(4)
		if srcRows < 0 {
			return fmt.Errorf("src_rows=%d: %w", srcRows, ErrArgs)
		}
		if err := need(0)(n, a); err != nil {
			return err
		}
		if err := need(2)(n/cols, a); err != nil {
			return err
		}
		return need(1)(srcRows*cols, a)
	}, fb("dst"), fb("src"), ib("idx"), in("cols"), in("src_rows"))
	def("bias_add", func(n int, a args) error {
		if err := rowsOf(n, a, 2); err != nil {
			return err
		}
		if err := need(0)(n, a); err != nil {
			return err
		}
		return need(1)(a.int(2), a)
	}, fb("y"), fb("b"), in("cols"))
	kernels["bias_relu"] = Kernel{Name: "bias_relu", Params: kernels["bias_add"].Params, check: kernels["bias_add"].check}
	def("relu_grad", need(0, 1), fb("dy"), fb("y"))
	def("col_sum", func(n int, a args) error {
		rows := a.int(2)
		if rows < 0 || rows > MaxLen/max(n, 1) {
			return fmt.Errorf("rows=%d: %w", rows, ErrRange)
		}
		if err := need(0)(rows*n, a); err != nil {
			return err
		}
		return need(1)(n, a)
	}, fb("x"), fb("out"), in("rows"))
	def("mse_grad", need(0, 1, 2), fb("pred"), fb("target"), fb("grad"), fl("scale"))
	def("sq_err", need(0, 1, 2), fb("pred"), fb("target"), fb("out"))
	def("adam", need(0, 1, 2, 3), fb("p"), fb("g"), fb("m"), fb("v"),
		fl("b1"), fl("c1"), fl("b2"), fl("c2"), fl("step"), fl("bc2_sqrt"), fl("eps"), fl("wd"))
	def("adam_k", func(n int, a args) error {
		if a.len(4) < 8 {
			return fmt.Errorf("k has %d elements, needs 8 (b1, c1, b2, c2, step, bc2_sqrt, eps, wd): %w", a.len(4), ErrRange)
		}
		return need(0, 1, 2, 3)(n, a)
	}, fb("p"), fb("g"), fb("m"), fb("v"), fb("k"))
	// SAC (sac.cu): per-row kernels over n rows of ad action columns.
	def("sac_head", func(n int, a args) error {
		ad := a.int(8)
		if ad < 1 || ad > MaxLen/2/max(n, 1) {
			return fmt.Errorf("ad=%d: %w", ad, ErrArgs)
		}
		if err := need(0)(n*2*ad, a); err != nil {
			return err
		}
		if err := need(1, 4, 6, 7)(n*ad, a); err != nil {
			return err
		}
		if err := need(2, 3)(ad, a); err != nil {
			return err
		}
		return need(5)(n, a)
	}, fb("out"), fb("eps"), fb("scale"), fb("bias"), fb("action"), fb("logp"), fb("xs"), fb("ths"),
		in("ad"), fl("ls_half"), fl("ls_off"), fl("logp_const"))
	def("sac_head_grad", func(n int, a args) error {
		ad := a.int(7)
		if ad < 1 || ad > MaxLen/2/max(n, 1) {
			return fmt.Errorf("ad=%d: %w", ad, ErrArgs)
		}
		if err := need(0, 1, 3, 4)(n*ad, a); err != nil {
			return err
		}
		if err := need(2)(ad, a); err != nil {
			return err
		}
		if err := need(5)(1, a); err != nil {
			return err
		}
		return need(6)(n*2*ad, a)
	}, fb("dact"), fb("eps"), fb("scale"), fb("xs"), fb("ths"), fb("log_alpha"), fb("dout"),
		in("ad"), fl("ls_half"), fl("ls_off"), fl("inv_batch"))
	def("sac_target", func(n int, a args) error {
		if err := need(0, 1, 2, 3, 4, 5)(n, a); err != nil {
			return err
		}
		return need(6)(1, a)
	}, fb("y"), fb("rew"), fb("term"), fb("q1"), fb("q2"), fb("logp"), fb("log_alpha"), fl("gamma"))
	def("sac_actor_loss", func(n int, a args) error {
		if err := need(0, 1, 2, 4, 5, 6)(n, a); err != nil {
			return err
		}
		return need(3)(1, a)
	}, fb("q1"), fb("q2"), fb("logp"), fb("log_alpha"), fb("dq1"), fb("dq2"), fb("row_loss"), fl("inv_batch"))
	def("sac_alpha_grad", func(n int, a args) error {
		if n > 1 {
			return fmt.Errorf("n=%d, want 1: %w", n, ErrArgs)
		}
		if a.int(4) < 1 {
			return fmt.Errorf("count=%d: %w", a.int(4), ErrArgs)
		}
		return need(0, 1, 2, 3)(n, a)
	}, fb("grad"), fb("loss"), fb("logp_sum"), fb("log_alpha"), in("count"), fl("target_entropy"))
	def("concat_cols", func(n int, a args) error {
		ca, cb := a.int(3), a.int(4)
		if ca < 0 || cb < 0 || ca+cb < 1 || n%(ca+cb) != 0 {
			return fmt.Errorf("n=%d, ca=%d, cb=%d: %w", n, ca, cb, ErrArgs)
		}
		rows := n / (ca + cb)
		if err := need(0)(n, a); err != nil {
			return err
		}
		if err := need(1)(rows*ca, a); err != nil {
			return err
		}
		return need(2)(rows*cb, a)
	}, fb("dst"), fb("a"), fb("b"), in("ca"), in("cb"))
	def("take_cols", func(n int, a args) error {
		w, scols, off := a.int(2), a.int(3), a.int(4)
		if w < 1 || off < 0 || off+w > scols || n%w != 0 {
			return fmt.Errorf("n=%d, w=%d, scols=%d, off=%d: %w", n, w, scols, off, ErrArgs)
		}
		if err := need(0)(n, a); err != nil {
			return err
		}
		return need(1)(n/w*scols, a)
	}, fb("dst"), fb("src"), in("w"), in("scols"), in("off"), in("acc"))
	defADM()
	defRoll()
	// BC (bc.cu): n = rows·ad elements.
	def("bc_head", func(n int, a args) error {
		ad := a.int(7)
		if ad < 1 || n%ad != 0 || n > MaxLen/2 {
			return fmt.Errorf("n=%d, ad=%d: %w", n, ad, ErrArgs)
		}
		if err := need(1, 4, 5)(n, a); err != nil {
			return err
		}
		if err := need(2, 3)(ad, a); err != nil {
			return err
		}
		return need(0, 6)(2*n, a)
	}, fb("out"), fb("target"), fb("scale"), fb("bias"), fb("action"), fb("sq"), fb("dout"), in("ad"), fl("coef"))
	// The ensemble (ensemble.cu).
	def("ens_swish_grad", need(0, 1, 2), fb("dy"), fb("u"), fb("sig"))
	// stacked checks a launch over n = members·rows·c elements of stacked
	// members' [rows, c] blocks (c and rows at arguments ci, ci+1): mats
	// hold n elements, vecs members·c.
	stacked := func(ci int, mats, vecs []int) func(n int, a args) error {
		return func(n int, a args) error {
			c, rows := a.int(ci), a.int(ci+1)
			if c < 1 || rows < 1 || n%(rows*c) != 0 {
				return fmt.Errorf("n=%d is not a multiple of rows=%d·c=%d: %w", n, rows, c, ErrArgs)
			}
			if err := need(mats...)(n, a); err != nil {
				return err
			}
			return need(vecs...)(n/rows, a)
		}
	}
	def("ens_swish", stacked(4, []int{0, 2, 3}, []int{1}), fb("u"), fb("bias"), fb("sig"), fb("act"), in("c"),
		in("rows"))
	def("ens_bias_add", stacked(2, []int{0}, []int{1}), fb("y"), fb("bias"), in("c"), in("rows"))
	def("ens_head", func(n int, a args) error {
		d, rows := a.int(11), a.int(12)
		if d < 1 || rows < 1 || n%rows != 0 || n > MaxLen/(2*d) {
			return fmt.Errorf("n=%d rows of d=%d in members of %d rows: %w", n, d, rows, ErrArgs)
		}
		members := n / rows
		if err := need(0, 7)(n*2*d, a); err != nil {
			return err
		}
		if err := need(3, 6, 8, 9)(n*d, a); err != nil {
			return err
		}
		if err := need(1, 2)(members*d, a); err != nil {
			return err
		}
		if err := need(5)(members, a); err != nil {
			return err
		}
		return need(4, 10)(n, a)
	}, fb("o"), fb("mx"), fb("mn"), fb("tg"), fb("w"), fb("wsum"), fb("lv"), fb("dout"), fb("tmax"), fb("tmin"),
		fb("rowloss"), in("d"), in("rows"))
	def("ens_loss", func(n int, a args) error {
		rows, d := a.int(5), a.int(6)
		if rows < 0 || d < 0 {
			return fmt.Errorf("rows=%d, d=%d: %w", rows, d, ErrArgs)
		}
		if err := need(0)(n*rows, a); err != nil {
			return err
		}
		if err := need(1)(n, a); err != nil {
			return err
		}
		if err := need(2, 3)(n*d, a); err != nil {
			return err
		}
		return need(4)(2*n, a)
	}, fb("rowloss"), fb("wsum"), fb("mx"), fb("mn"), fb("out"), in("rows"), in("d"), fl("coef"))
}

// defADM defines the ADM train step's kernels (adm.cu).
func defADM() {
	// steps checks a GRU step's launch: n = b·h over rows row0.. of
	// [R, w·h] buffers at bufs (w columns of h each).
	type span struct{ buf, w, rowArg int }
	steps := func(hArg, rowArg, prevArg int, spans []span, batchBufs []span, vecs []int) func(n int, a args) error {
		return func(n int, a args) error {
			h, row0 := a.int(hArg), a.int(rowArg)
			if h < 1 || n%h != 0 || row0 < 0 {
				return fmt.Errorf("n=%d, h=%d, row0=%d: %w", n, h, row0, ErrArgs)
			}
			b := n / h
			if a.int(prevArg) != 0 && row0 < b {
				return fmt.Errorf("row0=%d has no previous step of %d rows: %w", row0, b, ErrArgs)
			}
			for _, s := range spans {
				r := a.int(s.rowArg)
				if r < 0 || (r+b) > MaxLen/(s.w*h) {
					return fmt.Errorf("rows %d+%d of %d columns: %w", r, b, s.w*h, ErrRange)
				}
				if err := need(s.buf)((r+b)*s.w*h, a); err != nil {
					return err
				}
			}
			for _, s := range batchBufs {
				if err := need(s.buf)(b*s.w*h, a); err != nil {
					return err
				}
			}
			return need(vecs...)(3*h, a)
		}
	}
	def("adm_gru_fwd", steps(8, 9, 10, []span{{0, 3, 9}, {4, 3, 9}, {5, 1, 9}, {6, 1, 9}}, []span{{2, 3, 0}, {7, 1, 0}}, []int{1, 3}),
		fb("gi"), fb("bi"), fb("gh"), fb("bh"), fb("gates"), fb("ghn"), fb("y"), fb("hcur"),
		in("h"), in("row0"), in("has_prev"))
	def("adm_gru_bwd", steps(8, 9, 11, []span{{0, 3, 9}, {1, 1, 9}, {2, 1, 9}, {3, 1, 9}, {5, 3, 9}, {6, 3, 10}},
		[]span{{4, 1, 0}, {7, 3, 0}}, nil),
		fb("gates"), fb("ghn"), fb("y"), fb("gy"), fb("dh"), fb("dgi"), fb("dgh"), fb("dghs"),
		in("h"), in("row0"), in("drow"), in("has_prev"))
	// rowsOfC checks an element-wise launch over n = rows·c elements (c at
	// argument ci): mats hold [rows, c], vecs [c], rowVecs [rows].
	rowsOfC := func(ci int, mats, vecs, rowVecs []int) func(n int, a args) error {
		return func(n int, a args) error {
			if err := rowsOf(n, a, ci); err != nil {
				return err
			}
			c := a.int(ci)
			if err := need(mats...)(n, a); err != nil {
				return err
			}
			if err := need(vecs...)(c, a); err != nil {
				return err
			}
			return need(rowVecs...)(n/c, a)
		}
	}
	def("adm_swish_res", rowsOfC(6, []int{0, 2, 3, 4, 5}, []int{1}, nil),
		fb("u"), fb("bias"), fb("x"), fb("mask"), fb("sig"), fb("w"), in("c"))
	def("adm_center", rowsOfC(4, []int{0, 2, 3}, nil, []int{1}),
		fb("w"), fb("rowsum"), fb("xc"), fb("sq"), in("c"))
	def("adm_norm", rowsOfC(6, []int{0, 5}, []int{2, 3}, []int{1, 4}),
		fb("xhat"), fb("sqsum"), fb("gamma"), fb("beta"), fb("inv"), fb("y"), in("c"), fl("eps"))
	def("adm_norm_terms", rowsOfC(6, []int{0, 2, 3, 4, 5}, []int{1}, nil),
		fb("gy"), fb("gamma"), fb("xhat"), fb("g"), fb("gx"), fb("prod"), in("c"))
	def("adm_res_grad", rowsOfC(10, []int{0, 3, 5, 6, 7, 8, 9}, nil, []int{1, 2, 4}),
		fb("g"), fb("gsum"), fb("gxsum"), fb("xhat"), fb("inv"), fb("u"), fb("sig"), fb("mask"), fb("dx"), fb("du"),
		in("c"))
	def("adm_head", func(n int, a args) error {
		d := a.int(11)
		if d < 1 || n > MaxLen/(2*d) {
			return fmt.Errorf("n=%d rows of d=%d: %w", n, d, ErrArgs)
		}
		if err := need(0, 7)(n*2*d, a); err != nil {
			return err
		}
		if err := need(3, 6, 8, 9)(n*d, a); err != nil {
			return err
		}
		if err := need(1, 2)(d, a); err != nil {
			return err
		}
		if err := need(5)(1, a); err != nil {
			return err
		}
		return need(4, 10)(n, a)
	}, fb("o"), fb("mx"), fb("mn"), fb("tg"), fb("w"), fb("wsum"), fb("lv"), fb("dout"), fb("tmax"), fb("tmin"),
		fb("rowloss"), in("d"))
	def("adm_loss", func(n int, a args) error {
		rows, d := a.int(5), a.int(6)
		if n > 1 || rows < 0 || d < 0 {
			return fmt.Errorf("n=%d (want 1), rows=%d, d=%d: %w", n, rows, d, ErrArgs)
		}
		if err := need(0)(rows, a); err != nil {
			return err
		}
		if err := need(1)(1, a); err != nil {
			return err
		}
		if err := need(2, 3)(d, a); err != nil {
			return err
		}
		return need(4)(2, a)
	}, fb("rowloss"), fb("wsum"), fb("mx"), fb("mn"), fb("out"), in("rows"), in("d"), fl("coef"))
	def("dropout_mask", func(n int, a args) error {
		if thr := a.int(3); thr < 0 || thr > 1<<16 {
			return fmt.Errorf("thr=%d outside [0, 65536]: %w", thr, ErrArgs)
		}
		if at := a.int(2); at < 0 || at > MaxLen/2-1 {
			return fmt.Errorf("at=%d: %w", at, ErrArgs)
		}
		if err := need(1)(2*a.int(2)+2, a); err != nil {
			return err
		}
		return need(0)(n, a)
	}, fb("mask"), ib("state"), in("at"), in("thr"), fl("keep"))
}

// defRoll defines the roll-out's kernels (roll.cu): the GRU's launches
// over n = rows·h elements of feature-major [rows, w] activations, (row r,
// unit c) at c·ld + r; the head's over plans or rows.
func defRoll() {
	// fm checks the feature-major operands of a launch (h at argument hArg,
	// ld at hArg+1, has_prev at prevArg): gates [rows, 3h] at gates, states
	// [rows, h] at states, the recurrent ones (read only with has_prev)
	// at prevGates and prevStates, vectors [3h] at vecs.
	fm := func(hArg, prevArg int, gates, states, prevGates, prevStates, vecs []int) func(n int, a args) error {
		return func(n int, a args) error {
			h, ld, prev := a.int(hArg), a.int(hArg+1), a.int(prevArg)
			if h < 1 || n%h != 0 || prev < 0 || prev > 1 {
				return fmt.Errorf("n=%d, h=%d, has_prev=%d: %w", n, h, prev, ErrArgs)
			}
			rows := n / h
			if ld < max(rows, 1) {
				return fmt.Errorf("ld=%d < rows=%d: %w", ld, rows, ErrArgs)
			}
			if ld > MaxLen/(3*h) {
				return fmt.Errorf("[%d, %d] with ld=%d: %w", rows, 3*h, ld, ErrRange)
			}
			// A [rows, w] operand's last element is at (w-1)·ld + rows-1.
			if err := need(gates...)((3*h-1)*ld+rows, a); err != nil {
				return err
			}
			if err := need(states...)((h-1)*ld+rows, a); err != nil {
				return err
			}
			if prev != 0 {
				if err := need(prevGates...)((3*h-1)*ld+rows, a); err != nil {
					return err
				}
				if err := need(prevStates...)((h-1)*ld+rows, a); err != nil {
					return err
				}
			}
			return need(vecs...)(3*h, a)
		}
	}
	gru0 := fm(8, 12, []int{0}, []int{7}, []int{4}, []int{6}, []int{3, 5})
	def("roll_gru0", func(n int, a args) error {
		if err := gru0(n, a); err != nil {
			return err
		}
		h, ad, off := a.int(8), a.int(10), a.int(11)
		if ad < 1 || off < 0 || ad > MaxLen/(3*h) {
			return fmt.Errorf("ad=%d, act_off=%d: %w", ad, off, ErrArgs)
		}
		if rows := n / h; rows > (MaxLen-off)/ad {
			return fmt.Errorf("act_off=%d + %d rows of %d: %w", off, rows, ad, ErrRange)
		}
		if err := need(1)(off+n/h*ad, a); err != nil {
			return err
		}
		return need(2)(ad*3*h, a)
	}, fb("p0"), fb("act"), fb("wa"), fb("bi"), fb("gh"), fb("bh"), fb("hp"), fb("hout"),
		in("h"), in("ld"), in("ad"), in("act_off"), in("has_prev"))
	def("roll_gru", fm(6, 8, []int{0}, []int{5}, []int{2}, []int{4}, []int{1, 3}),
		fb("gi"), fb("bi"), fb("gh"), fb("bh"), fb("hp"), fb("hout"), in("h"), in("ld"), in("has_prev"))
	// roll_plan_in: n plans from a window of rows rows of m states.
	def("roll_plan_in", func(n int, a args) error {
		od, ad, m, rows := a.int(9), a.int(10), a.int(11), a.int(12)
		if od < 1 || ad < 1 || m < 1 || rows < 0 {
			return fmt.Errorf("od=%d, ad=%d, m=%d, rows=%d: %w", od, ad, m, rows, ErrArgs)
		}
		if od > MaxLen/m || ad > MaxLen/m || od+ad > MaxLen {
			return fmt.Errorf("od=%d, ad=%d, m=%d: %w", od, ad, m, ErrRange)
		}
		if n > MaxLen/od || n > MaxLen/(m*ad) || rows > MaxLen/(m*od) || rows > MaxLen/(m*ad) {
			return fmt.Errorf("%d plans, %d rows of %d states: %w", n, rows, m, ErrRange)
		}
		if err := need(0)(n*od, a); err != nil {
			return err
		}
		if err := need(1)(m*n*ad, a); err != nil {
			return err
		}
		if err := need(2)(rows*m*od, a); err != nil {
			return err
		}
		if err := need(3)(rows*m*ad, a); err != nil {
			return err
		}
		if err := need(4)(rows, a); err != nil {
			return err
		}
		if err := need(5, 6)(n, a); err != nil {
			return err
		}
		return need(7, 8)(od+ad, a)
	}, fb("obs_n"), fb("act_n"), fb("s"), fb("a"), ib("lens"), ib("slot"), ib("k"), fb("mean"), fb("std"),
		in("od"), in("ad"), in("m"), in("rows"))
	// roll_drop_base: n plans' generator states, two int32 each.
	def("roll_drop_base", func(n int, a args) error {
		if n > MaxLen/2 {
			return fmt.Errorf("%d plans: %w", n, ErrRange)
		}
		if err := need(0)(2*n, a); err != nil {
			return err
		}
		return need(1, 2)(n, a)
	}, ib("base"), ib("row"), ib("k"), in("seed_lo"), in("seed_hi"), in("step"), in("row0"))
	// roll_resblock: n rows of feature-major [rows, h] (ld); base [2·rows]
	// is read only with drop.
	def("roll_resblock", func(n int, a args) error {
		h, ld, blk, drop := a.int(6), a.int(7), a.int(8), a.int(12)
		if h < 1 || ld < max(n, 1) || drop < 0 || drop > 1 || blk < 0 {
			return fmt.Errorf("n=%d, h=%d, ld=%d, blk=%d, drop=%d: %w", n, h, ld, blk, drop, ErrArgs)
		}
		if ld > MaxLen/h || blk > MaxLen/h-1 {
			return fmt.Errorf("[%d, %d] with ld=%d, block %d: %w", n, h, ld, blk, ErrRange)
		}
		if err := need(0, 1)((h-1)*ld+n, a); err != nil {
			return err
		}
		if err := need(2, 3, 4)(h, a); err != nil {
			return err
		}
		if drop != 0 {
			if n > MaxLen/2 {
				return fmt.Errorf("%d rows: %w", n, ErrRange)
			}
			return need(5)(2*n, a)
		}
		return nil
	}, fb("x"), fb("u"), fb("b"), fb("gamma"), fb("beta"), ib("base"), in("h"), in("ld"), in("blk"), in("thr"),
		fl("scale"), fl("eps"), in("drop"))
	// roll_finish: n output rows from plans plans' outputs [plans, 2(od+1)],
	// a window of rows rows of m states, outputs at rows out_off.. .
	def("roll_finish", func(n int, a args) error {
		od, m, rows, plans, wantU, off := a.int(15), a.int(16), a.int(17), a.int(18), a.int(19), a.int(20)
		if od < 1 || m < 1 || rows < 0 || plans < 0 || wantU < 0 || wantU > 1 || off < 0 {
			return fmt.Errorf("od=%d, m=%d, rows=%d, plans=%d, want_u=%d, out_off=%d: %w", od, m, rows, plans, wantU, off, ErrArgs)
		}
		d := od + 1
		if od > MaxLen/m || plans > MaxLen/(2*d) || rows > MaxLen/(m*od) || n > MaxLen/m || n > MaxLen/d ||
			off > MaxLen-n || off+n > MaxLen/od {
			return fmt.Errorf("%d rows at %d, %d plans, a window of %d rows of %d states of %d: %w", n, off, plans, rows, m, od, ErrRange)
		}
		if err := need(0)(plans*2*d, a); err != nil {
			return err
		}
		if err := need(1)(2*d, a); err != nil {
			return err
		}
		if err := need(2, 3)(d, a); err != nil {
			return err
		}
		if err := need(4)(rows*m*od, a); err != nil {
			return err
		}
		if err := need(5)(rows, a); err != nil {
			return err
		}
		if err := need(6, 7)(n, a); err != nil {
			return err
		}
		if err := need(8)(n*m, a); err != nil {
			return err
		}
		if err := need(9)(n*d, a); err != nil {
			return err
		}
		if err := need(10, 13)((off+n)*od, a); err != nil {
			return err
		}
		return need(11, 12, 14)(off+n, a)
	}, fb("o"), fb("ob"), fb("mx"), fb("mn"), fb("s"), ib("lens"), ib("slot"), ib("kd"), ib("pidx"), fb("eps"),
		fb("next"), fb("rew"), fb("u"), fb("mean"), ib("fin"), in("od"), in("m"), in("rows"), in("plans"),
		in("want_u"), in("out_off"), fl("beta"))
	// roll_gather_cols: n = rows·w elements of feature-major [rows, w]
	// (ldd) gathered from [rows_src, w] (lds).
	def("roll_gather_cols", func(n int, a args) error {
		w, ldd, lds, rs := a.int(3), a.int(4), a.int(5), a.int(6)
		if w < 1 || n%w != 0 || rs < 0 {
			return fmt.Errorf("n=%d, w=%d, rows_src=%d: %w", n, w, rs, ErrArgs)
		}
		rows := n / w
		if ldd < max(rows, 1) || lds < max(rs, 1) {
			return fmt.Errorf("ldd=%d < rows=%d or lds=%d < rows_src=%d: %w", ldd, rows, lds, rs, ErrArgs)
		}
		if ldd > MaxLen/w || lds > MaxLen/w {
			return fmt.Errorf("ldd=%d, lds=%d with w=%d: %w", ldd, lds, w, ErrRange)
		}
		if err := need(0)((w-1)*ldd+rows, a); err != nil {
			return err
		}
		if err := need(1)((w-1)*lds+rs, a); err != nil {
			return err
		}
		return need(2)(rows, a)
	}, fb("dst"), fb("src"), ib("idx"), in("w"), in("ldd"), in("lds"), in("rows_src"))
	// roll_push: n rows pushed into a window of rows rows of m states.
	def("roll_push", func(n int, a args) error {
		od, ad, m, rows, off := a.int(6), a.int(7), a.int(8), a.int(9), a.int(10)
		if od < 1 || ad < 1 || m < 1 || rows < 0 || off < 0 {
			return fmt.Errorf("od=%d, ad=%d, m=%d, rows=%d, next_off=%d: %w", od, ad, m, rows, off, ErrArgs)
		}
		if od > MaxLen/m || ad > MaxLen/m || rows > MaxLen/(m*od) || rows > MaxLen/(m*ad) || off > MaxLen-n ||
			off+n > MaxLen/od {
			return fmt.Errorf("%d rows at %d, a window of %d rows of %d states: %w", n, off, rows, m, ErrRange)
		}
		if err := need(0)(rows*m*od, a); err != nil {
			return err
		}
		if err := need(1)(rows*m*ad, a); err != nil {
			return err
		}
		if err := need(2)(rows, a); err != nil {
			return err
		}
		if err := need(3, 5)(n, a); err != nil {
			return err
		}
		return need(4)((off+n)*od, a)
	}, fb("s"), fb("a"), ib("lens"), ib("slot"), fb("next"), ib("cont"), in("od"), in("ad"), in("m"), in("rows"),
		in("next_off"))
	// roll_act: n rows' actions set in a window of rows rows of m states.
	def("roll_act", func(n int, a args) error {
		ad, m, rows := a.int(4), a.int(5), a.int(6)
		if ad < 1 || m < 1 || rows < 0 {
			return fmt.Errorf("ad=%d, m=%d, rows=%d: %w", ad, m, rows, ErrArgs)
		}
		if ad > MaxLen/m || rows > MaxLen/(m*ad) || n > MaxLen/ad {
			return fmt.Errorf("%d rows, a window of %d rows of %d actions of %d: %w", n, rows, m, ad, ErrRange)
		}
		if err := need(0)(rows*m*ad, a); err != nil {
			return err
		}
		if err := need(1)(rows, a); err != nil {
			return err
		}
		if err := need(2)(n, a); err != nil {
			return err
		}
		return need(3)(n*ad, a)
	}, fb("a"), ib("lens"), ib("slot"), fb("act"), in("ad"), in("m"), in("rows"))
	// roll_done: n rows' termination from next [n, od] and nr DoneSpec
	// ranges; hdone is read only with use_host.
	def("roll_done", func(n int, a args) error {
		od, nr, finite, host := a.int(7), a.int(8), a.int(9), a.int(10)
		if od < 1 || nr < 0 || finite < 0 || finite > 1 || host < 0 || host > 1 {
			return fmt.Errorf("od=%d, nr=%d, finite=%d, use_host=%d: %w", od, nr, finite, host, ErrArgs)
		}
		if n > MaxLen/od || nr > MaxLen/3 {
			return fmt.Errorf("%d rows of %d, %d ranges: %w", n, od, nr, ErrRange)
		}
		if err := need(0, 1, 2)(n, a); err != nil {
			return err
		}
		if err := need(3)(n*od, a); err != nil {
			return err
		}
		if host != 0 {
			if err := need(4)(n, a); err != nil {
				return err
			}
		}
		if err := need(5)(3*nr, a); err != nil {
			return err
		}
		return need(6)(2*nr, a)
	}, ib("done"), ib("cont"), ib("fin"), fb("next"), ib("hdone"), ib("spec_i"), fb("spec_f"), in("od"), in("nr"),
		in("finite"), in("use_host"))
}

// Kernels returns every kernel, sorted by name.
func Kernels() []Kernel {
	ks := make([]Kernel, 0, len(kernels))
	for _, k := range kernels {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}

// CheckLaunch checks a launch of kernel name over n elements and returns
// the kernel and its arguments with every int converted to int32. Buffers
// are checked for type and length only: the caller checks that they are
// its own and not freed.
func CheckLaunch(name string, n int, in ...any) (Kernel, []any, error) {
	k, ok := kernels[name]
	if !ok {
		return Kernel{}, nil, fmt.Errorf("device: launch %q: %w", name, ErrUnknown)
	}
	if n < 0 || n > MaxLen {
		return k, nil, fmt.Errorf("device: launch %s: n=%d: %w (0..%d)", name, n, ErrRange, MaxLen)
	}
	if len(in) != len(k.Params) {
		return k, nil, fmt.Errorf("device: launch %s: %d arguments, want %d (%s): %w", name, len(in), len(k.Params), k.signature(), ErrArgs)
	}
	a := args{v: make([]any, len(in)), p: k.Params}
	for i, p := range k.Params {
		v := in[i]
		bad := func() error {
			return fmt.Errorf("device: launch %s: argument %d (%s) is %T, want %v: %w", name, i, p.Name, v, p.Kind, ErrArgs)
		}
		switch p.Kind {
		case FloatBuf, IntBuf:
			b, ok := v.(Buffer)
			if !ok || b == nil {
				return k, nil, bad()
			}
			want := Float32
			if p.Kind == IntBuf {
				want = Int32
			}
			if b.Type() != want {
				return k, nil, fmt.Errorf("device: launch %s: argument %d (%s): %w: buffer holds %v, want %v", name, i, p.Name, ErrType, b.Type(), want)
			}
			a.v[i] = b
		case Int:
			switch x := v.(type) {
			case int32:
				a.v[i] = x
			case int:
				if x < -1<<31 || x >= 1<<31 {
					return k, nil, fmt.Errorf("device: launch %s: argument %d (%s) = %d: %w", name, i, p.Name, x, ErrRange)
				}
				a.v[i] = int32(x)
			default:
				return k, nil, bad()
			}
		case Float:
			x, ok := v.(float32)
			if !ok {
				return k, nil, bad()
			}
			a.v[i] = x
		}
	}
	if err := k.check(n, a); err != nil {
		return k, nil, fmt.Errorf("device: launch %s over %d: %w", name, n, err)
	}
	return k, a.v, nil
}

func (k Kernel) signature() string {
	s := "n"
	for _, p := range k.Params {
		s += ", " + p.Name + " " + p.Kind.String()
	}
	return s
}
