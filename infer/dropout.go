package infer

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/onnx/schema"
)

// MC dropout in the ADM-Roll engines. An ADM graph exported with dropout
// (onnx.ADMOptions.Dropout, onnx.ADMStepOptions.Dropout; metadata
// "dropout" = p) takes the input dropout_mask [res_blocks, batch, hidden] of
// keep flags. The engines fill it from a counter-based generator keyed by
// (seed, roll-out step, start row, k): the mask of row r's k-step plan at
// step t does not depend on how the batch is cut into ONNX Runtime calls,
// on the worker count or on the engine, so the direct and the incremental
// engine draw the same masks, and a roll-out is reproducible for a seed.
// Rollout draws the seed with one rng.Int63() before any other draw (only
// when the graph has dropout; without it the random stream is as before).

// DropoutKeep fills keep with the keep flags (1 keep, 0 drop, each dropped
// with probability p to a 2⁻³² resolution) of the k-step plan of start row
// row at roll-out step step, for the roll-out seed seed (rollout.DropoutKeep).
// Entry b·hidden+u is unit u of ResBlock b; the engines use len(keep) =
// res_blocks·hidden. Exported as the definition the engines follow (tests
// and measurements rebuild the masks with it).
func DropoutKeep(seed int64, step, row, k int, p float64, keep []float32) {
	rollout.DropoutKeep(seed, step, row, k, p, keep)
}

// dropoutFill writes n flags from the generator state base into dst, flag
// e at dst[(e/width)·stride + e%width] (width units per block, blocks
// stride apart), two flags per 64-bit draw: flag e is half e%2 (the low 32
// bits for even e) of splitmix64(base + (e/2+1)·golden), 0 when below thr.
// It is cpukern.DropoutFill, a C kernel (16 flags per AVX-512 vector); the
// Go loop it replaced is dropoutFillGo in dropout_fill_test.go.
func dropoutFill(base uint64, thr uint32, dst []float32, n, width, stride int) {
	cpukern.DropoutFill(base, thr, dst, n, width, stride)
}

// dropout is an engine's MC dropout state.
type dropout struct {
	p              float64 // 0: the graph has no dropout
	thr            uint32
	blocks, hidden int
	seed           int64 // drawn by Rollout
	step, row0     int   // the roll-out step and the chunk's first start row
}

func (d *dropout) on() bool { return d != nil && d.p > 0 }

// dropper is a stepper with MC dropout.
type dropper interface{ dropState() *dropout }

// fill writes the keep flags of chunk row r's k-step plan into row q of a
// [blocks, n, hidden] mask.
func (d *dropout) fill(mask []float32, n, q, r, k int) {
	dropoutFill(rollout.DropoutBase(d.seed, d.step, d.row0+r, k), d.thr, mask[q*d.hidden:], d.blocks*d.hidden, d.hidden, n*d.hidden)
}

// ones sets row q of a [blocks, n, hidden] mask to keep every unit.
func (d *dropout) ones(mask []float32, n, q int) {
	for b := 0; b < d.blocks; b++ {
		o := (b*n + q) * d.hidden
		for u := o; u < o+d.hidden; u++ {
			mask[u] = 1
		}
	}
}

// engineDropout reads an ADM graph's dropout from its metadata and inputs:
// p from "dropout" (absent: none), which needs the dropout_mask input.
func engineDropout(s *Session) (dropout, error) {
	v, ok := s.meta[schema.MetaDropout]
	has := slices.Contains(s.inputs, schema.DropoutMask)
	if !ok {
		if has {
			return dropout{}, fmt.Errorf("infer: the ADM has a %s input but no dropout metadata", schema.DropoutMask)
		}
		return dropout{}, nil
	}
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || !(p > 0 && p < 1) {
		return dropout{}, fmt.Errorf("infer: ADM metadata dropout=%q is not a probability in (0, 1)", v)
	}
	if !has {
		return dropout{}, fmt.Errorf("infer: the ADM's metadata has dropout=%s but the graph has no %s input", v, schema.DropoutMask)
	}
	d := dropout{p: p, thr: rollout.DropThreshold(p)}
	if d.blocks, err = MetaInt(s.meta, schema.MetaResBlocks); err == nil {
		d.hidden, err = MetaInt(s.meta, schema.MetaHidden)
	}
	if err != nil {
		return dropout{}, fmt.Errorf("infer: ADM metadata: %w", err)
	}
	return d, nil
}
