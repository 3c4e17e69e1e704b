package emu

// The kernels are static C functions of this file's preamble (emu.h makes
// KERNEL static), so only this file calls them.

// #cgo CFLAGS: -O2 -std=gnu99 -I${SRCDIR}/../kernels
// #cgo LDFLAGS: -lm
// #include "all.cu"
import "C"

// Argument accessors for the table below; CheckLaunch has already checked
// every kind and size.
func fb(a any) *C.float { return a.(*buffer).fptr() }
func ib(a any) *C.int   { return a.(*buffer).iptr() }
func in(a any) C.int    { return C.int(a.(int32)) }
func fl(a any) C.float  { return C.float(a.(float32)) }

// table runs each kernel of device.Kernels over n > 0 elements.
var table = map[string]func(n C.int, a []any){
	"fill":   func(n C.int, a []any) { C.fill(n, fb(a[0]), fl(a[1])) },
	"scale":  func(n C.int, a []any) { C.scale(n, fb(a[0]), fl(a[1])) },
	"axpy":   func(n C.int, a []any) { C.axpy(n, fl(a[0]), fb(a[1]), fb(a[2])) },
	"polyak": func(n C.int, a []any) { C.polyak(n, fb(a[0]), fb(a[1]), fl(a[2])) },
	"gather_rows": func(n C.int, a []any) {
		C.gather_rows(n, fb(a[0]), fb(a[1]), ib(a[2]), in(a[3]), in(a[4]))
	},
	"bias_add":  func(n C.int, a []any) { C.bias_add(n, fb(a[0]), fb(a[1]), in(a[2])) },
	"bias_relu": func(n C.int, a []any) { C.bias_relu(n, fb(a[0]), fb(a[1]), in(a[2])) },
	"relu_grad": func(n C.int, a []any) { C.relu_grad(n, fb(a[0]), fb(a[1])) },
	"col_sum":   func(n C.int, a []any) { C.col_sum(n, fb(a[0]), fb(a[1]), in(a[2])) },
	"mse_grad":  func(n C.int, a []any) { C.mse_grad(n, fb(a[0]), fb(a[1]), fb(a[2]), fl(a[3])) },
	"sq_err":    func(n C.int, a []any) { C.sq_err(n, fb(a[0]), fb(a[1]), fb(a[2])) },
	"adam": func(n C.int, a []any) {
		C.adam(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fl(a[4]), fl(a[5]), fl(a[6]), fl(a[7]),
			fl(a[8]), fl(a[9]), fl(a[10]), fl(a[11]))
	},
	"adam_k": func(n C.int, a []any) { C.adam_k(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4])) },
	"sac_head": func(n C.int, a []any) {
		C.sac_head(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]),
			in(a[8]), fl(a[9]), fl(a[10]), fl(a[11]))
	},
	"sac_head_grad": func(n C.int, a []any) {
		C.sac_head_grad(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]),
			in(a[7]), fl(a[8]), fl(a[9]), fl(a[10]))
	},
	"sac_target": func(n C.int, a []any) {
		C.sac_target(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fl(a[7]))
	},
	"sac_actor_loss": func(n C.int, a []any) {
		C.sac_actor_loss(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fl(a[7]))
	},
	"sac_alpha_grad": func(n C.int, a []any) {
		C.sac_alpha_grad(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), in(a[4]), fl(a[5]))
	},
	"concat_cols": func(n C.int, a []any) { C.concat_cols(n, fb(a[0]), fb(a[1]), fb(a[2]), in(a[3]), in(a[4])) },
	"take_cols": func(n C.int, a []any) {
		C.take_cols(n, fb(a[0]), fb(a[1]), in(a[2]), in(a[3]), in(a[4]), in(a[5]))
	},
	"adm_gru_fwd": func(n C.int, a []any) {
		C.adm_gru_fwd(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]),
			in(a[8]), in(a[9]), in(a[10]))
	},
	"adm_gru_bwd": func(n C.int, a []any) {
		C.adm_gru_bwd(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]),
			in(a[8]), in(a[9]), in(a[10]), in(a[11]))
	},
	"adm_swish_res": func(n C.int, a []any) {
		C.adm_swish_res(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), in(a[6]))
	},
	"adm_center": func(n C.int, a []any) { C.adm_center(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), in(a[4])) },
	"adm_norm": func(n C.int, a []any) {
		C.adm_norm(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), in(a[6]), fl(a[7]))
	},
	"adm_norm_terms": func(n C.int, a []any) {
		C.adm_norm_terms(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), in(a[6]))
	},
	"adm_res_grad": func(n C.int, a []any) {
		C.adm_res_grad(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]), fb(a[8]),
			fb(a[9]), in(a[10]))
	},
	"adm_head": func(n C.int, a []any) {
		C.adm_head(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]), fb(a[8]),
			fb(a[9]), fb(a[10]), in(a[11]))
	},
	"adm_loss": func(n C.int, a []any) {
		C.adm_loss(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), in(a[5]), in(a[6]), fl(a[7]))
	},
	"dropout_mask": func(n C.int, a []any) { C.dropout_mask(n, fb(a[0]), ib(a[1]), in(a[2]), in(a[3]), fl(a[4])) },
	"bc_head": func(n C.int, a []any) {
		C.bc_head(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), in(a[7]), fl(a[8]))
	},
	"ens_swish_grad": func(n C.int, a []any) { C.ens_swish_grad(n, fb(a[0]), fb(a[1]), fb(a[2])) },
	"ens_swish": func(n C.int, a []any) {
		C.ens_swish(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), in(a[4]), in(a[5]))
	},
	"ens_bias_add": func(n C.int, a []any) { C.ens_bias_add(n, fb(a[0]), fb(a[1]), in(a[2]), in(a[3])) },
	"ens_head": func(n C.int, a []any) {
		C.ens_head(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]), fb(a[8]),
			fb(a[9]), fb(a[10]), in(a[11]), in(a[12]))
	},
	"ens_loss": func(n C.int, a []any) {
		C.ens_loss(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), in(a[5]), in(a[6]), fl(a[7]))
	},
	"roll_gru0": func(n C.int, a []any) {
		C.roll_gru0(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), fb(a[6]), fb(a[7]),
			in(a[8]), in(a[9]), in(a[10]), in(a[11]), in(a[12]))
	},
	"roll_gru": func(n C.int, a []any) {
		C.roll_gru(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), fb(a[5]), in(a[6]), in(a[7]), in(a[8]))
	},
	"roll_plan_in": func(n C.int, a []any) {
		C.roll_plan_in(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), ib(a[4]), ib(a[5]), ib(a[6]), fb(a[7]), fb(a[8]),
			in(a[9]), in(a[10]), in(a[11]), in(a[12]))
	},
	"roll_drop_base": func(n C.int, a []any) {
		C.roll_drop_base(n, ib(a[0]), ib(a[1]), ib(a[2]), in(a[3]), in(a[4]), in(a[5]), in(a[6]))
	},
	"roll_resblock": func(n C.int, a []any) {
		C.roll_resblock(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), ib(a[5]), in(a[6]), in(a[7]), in(a[8]),
			in(a[9]), fl(a[10]), fl(a[11]), in(a[12]))
	},
	"roll_finish": func(n C.int, a []any) {
		C.roll_finish(n, fb(a[0]), fb(a[1]), fb(a[2]), fb(a[3]), fb(a[4]), ib(a[5]), ib(a[6]), ib(a[7]), ib(a[8]),
			fb(a[9]), fb(a[10]), fb(a[11]), fb(a[12]), fb(a[13]), ib(a[14]), in(a[15]), in(a[16]), in(a[17]), in(a[18]),
			in(a[19]), in(a[20]), fl(a[21]))
	},
	"roll_gather_cols": func(n C.int, a []any) {
		C.roll_gather_cols(n, fb(a[0]), fb(a[1]), ib(a[2]), in(a[3]), in(a[4]), in(a[5]), in(a[6]))
	},
	"roll_push": func(n C.int, a []any) {
		C.roll_push(n, fb(a[0]), fb(a[1]), ib(a[2]), ib(a[3]), fb(a[4]), ib(a[5]), in(a[6]), in(a[7]), in(a[8]),
			in(a[9]), in(a[10]))
	},
	"roll_act": func(n C.int, a []any) {
		C.roll_act(n, fb(a[0]), ib(a[1]), ib(a[2]), fb(a[3]), in(a[4]), in(a[5]), in(a[6]))
	},
	"roll_done": func(n C.int, a []any) {
		C.roll_done(n, ib(a[0]), ib(a[1]), ib(a[2]), fb(a[3]), ib(a[4]), ib(a[5]), fb(a[6]), in(a[7]), in(a[8]),
			in(a[9]), in(a[10]))
	},
}
