package ops

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "cell_kernels.h"
import "C"

import "unsafe"

// Go entry points of cell_kernels.c. Slices must hold what the kernels
// read and write; nil optional inputs become NULL.

func f32ptr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// GRUCellRows advances rows consecutive rows by one GRU step (PyTorch
// equations, gate order r, z, n) given gi = x·Wi, its bias bi and
// gh = h·Wh + Bh, writing the gates, the n-gate's h·Wh_n + Bh_n (ghn) and
// the new state out (gi, gh, gates: 3h columns; prev, ghn, out: h columns;
// prev nil for a zero state).
func GRUCellRows(rows, h int, gi, bi, gh, prev, gates, ghn, out []float32) {
	if rows == 0 || h == 0 {
		return
	}
	_ = gi[rows*3*h-1]
	_ = gh[rows*3*h-1]
	_ = gates[rows*3*h-1]
	_ = ghn[rows*h-1]
	_ = out[rows*h-1]
	_ = bi[3*h-1]
	if prev != nil {
		_ = prev[rows*h-1]
	}
	C.adm_gru_cell_fwd(C.int(rows), C.int(h), f32ptr(gi), f32ptr(bi), f32ptr(gh), f32ptr(prev), f32ptr(gates), f32ptr(ghn), f32ptr(out))
}

// gruCellBackRows is gruCellBack for rows consecutive rows.
func gruCellBackRows(rows, h int, gates, ghn, prev, g, dh, dgi, dgh []float32) {
	if rows == 0 || h == 0 {
		return
	}
	_ = gates[rows*3*h-1]
	_ = dgi[rows*3*h-1]
	_ = dgh[rows*3*h-1]
	_ = ghn[rows*h-1]
	_ = g[rows*h-1]
	_ = dh[rows*h-1]
	if prev != nil {
		_ = prev[rows*h-1]
	}
	C.adm_gru_cell_bwd(C.int(rows), C.int(h), f32ptr(gates), f32ptr(ghn), f32ptr(prev), f32ptr(g), f32ptr(dh), f32ptr(dgi), f32ptr(dgh))
}

// swishResidual writes sig = σ(u) and w = x + mask ⊙ u ⊙ σ(u) (mask nil: 1).
func swishResidual(u, x, mask, sig, w []float32) {
	n := len(u)
	if n == 0 {
		return
	}
	_, _, _ = x[n-1], sig[n-1], w[n-1]
	if mask != nil {
		_ = mask[n-1]
	}
	C.adm_swish_res_fwd(C.int(n), f32ptr(u), f32ptr(x), f32ptr(mask), f32ptr(sig), f32ptr(w))
}

// swishBack writes du = dw ⊙ σ(u)(1 + u(1-σ(u))) ⊙ mask (mask nil: 1).
func swishBack(u, sig, dw, mask, du []float32) {
	n := len(u)
	if n == 0 {
		return
	}
	_, _, _ = sig[n-1], dw[n-1], du[n-1]
	if mask != nil {
		_ = mask[n-1]
	}
	C.adm_swish_bwd(C.int(n), f32ptr(u), f32ptr(sig), f32ptr(dw), f32ptr(mask), f32ptr(du))
}

// SwishInPlace replaces y by y·σ(y).
func SwishInPlace(y []float32) {
	if len(y) == 0 {
		return
	}
	C.adm_swish(C.int(len(y)), f32ptr(y))
}

// expInto writes e^x (the kernels' exp, saturating outside [-87.3, 88])
// into y; used by the tests.
func expInto(x, y []float32) {
	if len(x) == 0 {
		return
	}
	_ = y[len(x)-1]
	C.adm_exp_n(C.int(len(x)), f32ptr(x), f32ptr(y))
}

// layerNormChunk normalises rows of w (c columns) into y (may alias w),
// writing xhat and the inverse standard deviations.
func layerNormChunk(rows, c int, w, gamma, beta, y, xhat, inv []float32, eps float32) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _, _, _, _ = w[rows*c-1], y[rows*c-1], xhat[rows*c-1], inv[rows-1], gamma[c-1], beta[c-1]
	C.adm_layernorm_fwd(C.int(rows), C.int(c), f32ptr(w), f32ptr(gamma), f32ptr(beta), f32ptr(y), f32ptr(xhat), f32ptr(inv), C.float(eps))
}

// layerNormBackChunk turns gy into dw (may alias gy) for rows of c columns
// and writes prod = gy ⊙ xhat.
func layerNormBackChunk(rows, c int, gy, gamma, xhat, inv, dw, prod []float32) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _, _, _, _ = gy[rows*c-1], xhat[rows*c-1], dw[rows*c-1], prod[rows*c-1], inv[rows-1], gamma[c-1]
	C.adm_layernorm_bwd(C.int(rows), C.int(c), f32ptr(gy), f32ptr(gamma), f32ptr(xhat), f32ptr(inv), f32ptr(dw), f32ptr(prod))
}
