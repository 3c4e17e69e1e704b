package devicetest

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/device"
)

// alien is a Buffer of no Device.
type alien struct{}

func (alien) Len() int          { return 1 << 20 }
func (alien) Type() device.Type { return device.Float32 }

func testErrors(t *testing.T, d device.Device) {
	h := h{t, d}
	x := h.alloc(device.Float32, 10)
	y := h.alloc(device.Float32, 10)
	idx := h.alloc(device.Int32, 4)
	freed := h.alloc(device.Float32, 10)
	big := h.alloc(device.Float32, 64)
	h.free(freed)
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"unknown kernel", d.Launch("no_such_kernel", 10, x), device.ErrUnknown},
		{"too few args", d.Launch("fill", 10, x), device.ErrArgs},
		{"too many args", d.Launch("fill", 10, x, float32(1), float32(2)), device.ErrArgs},
		{"float64 for float32", d.Launch("fill", 10, x, 1.5), device.ErrArgs},
		{"int for float32", d.Launch("scale", 10, x, 2), device.ErrArgs},
		{"float for buffer", d.Launch("fill", 10, float32(1), float32(1)), device.ErrArgs},
		{"nil buffer", d.Launch("fill", 10, nil, float32(1)), device.ErrArgs},
		{"int32 buffer for float32", d.Launch("fill", 4, idx, float32(1)), device.ErrType},
		{"float32 buffer for int32", d.Launch("gather_rows", 4, x, y, y, 1, 10), device.ErrType},
		{"int out of int32", d.Launch("bias_add", 10, x, y, 1<<40), device.ErrRange},
		{"buffer too short", d.Launch("fill", 11, x, float32(1)), device.ErrRange},
		{"second buffer too short", d.Launch("axpy", 10, float32(1), x, h.alloc(device.Float32, 9)), device.ErrRange},
		{"n not rows of cols", d.Launch("bias_add", 10, x, y, 3), device.ErrArgs},
		{"bias too short", d.Launch("bias_add", 10, x, h.alloc(device.Float32, 4), 5), device.ErrRange},
		{"gather index buffer short", d.Launch("gather_rows", 10, x, y, idx, 2, 5), device.ErrRange},
		{"gather source short", d.Launch("gather_rows", 4, x, y, idx, 1, 11), device.ErrRange},
		{"col_sum input short", d.Launch("col_sum", 5, x, y, 3), device.ErrRange},
		{"adm_gru_fwd step without a previous one", d.Launch("adm_gru_fwd", 2, x, x, x, x, x, x, x, x, 1, 1, 1), device.ErrArgs},
		{"adm_gru_bwd dgh rows short", d.Launch("adm_gru_bwd", 2, x, x, x, x, x, x, x, x, 1, 0, 9, 0), device.ErrRange},
		{"adm_loss n > 1", d.Launch("adm_loss", 2, x, x, x, x, x, 1, 1, float32(0.01)), device.ErrArgs},
		{"dropout_mask thr", d.Launch("dropout_mask", 4, x, idx, 0, 1<<17, float32(1)), device.ErrArgs},
		{"dropout_mask state short", d.Launch("dropout_mask", 4, x, idx, 2, 100, float32(1)), device.ErrRange},
		{"roll_gru0 actions short", d.Launch("roll_gru0", 2, big, x, big, big, big, big, big, big, 1, 2, 3, 5, 0), device.ErrRange},
		{"roll_gru0 wa short", d.Launch("roll_gru0", 2, big, big, x, big, big, big, big, big, 1, 2, 4, 0, 0), device.ErrRange},
		{"roll_gru0 no actions", d.Launch("roll_gru0", 2, big, big, big, big, big, big, big, big, 1, 2, 0, 0, 0), device.ErrArgs},
		{"roll_gru n not rows of h", d.Launch("roll_gru", 10, big, big, big, big, big, big, 3, 4, 0), device.ErrArgs},
		{"roll_gru ld < rows", d.Launch("roll_gru", 4, big, big, big, big, big, big, 1, 3, 0), device.ErrArgs},
		{"roll_gru has_prev 2", d.Launch("roll_gru", 4, big, big, big, big, big, big, 1, 4, 2), device.ErrArgs},
		{"roll_gru gh short", d.Launch("roll_gru", 4, big, big, x, big, big, big, 1, 4, 1), device.ErrRange},
		{"roll_gru h' short", d.Launch("roll_gru", 20, big, big, big, big, big, x, 2, 10, 0), device.ErrRange},
		{"roll_gru ld past MaxLen", d.Launch("roll_gru", 4, big, big, big, big, big, big, 1, device.MaxLen/2, 0), device.ErrRange},
		{"roll_plan_in window short", d.Launch("roll_plan_in", 1, big, big, x, big, idx, idx, idx, big, big, 1, 1, 4, 3), device.ErrRange},
		{"roll_plan_in lens short", d.Launch("roll_plan_in", 1, big, big, big, big, idx, idx, idx, big, big, 1, 1, 1, 5), device.ErrRange},
		{"roll_plan_in m 0", d.Launch("roll_plan_in", 1, big, big, big, big, idx, idx, idx, big, big, 1, 1, 0, 1), device.ErrArgs},
		{"roll_drop_base base short", d.Launch("roll_drop_base", 3, idx, idx, idx, 1, 0, 0, 0), device.ErrRange},
		{"roll_drop_base k short", d.Launch("roll_drop_base", 2, h.alloc(device.Int32, 4), idx, h.alloc(device.Int32, 1), 1, 0, 0, 0), device.ErrRange},
		{"roll_resblock ld < rows", d.Launch("roll_resblock", 4, big, big, big, big, big, idx, 1, 3, 0, 0, float32(1), float32(1e-5), 0), device.ErrArgs},
		{"roll_resblock drop 2", d.Launch("roll_resblock", 2, big, big, big, big, big, idx, 1, 2, 0, 0, float32(1), float32(1e-5), 2), device.ErrArgs},
		{"roll_resblock negative block", d.Launch("roll_resblock", 2, big, big, big, big, big, idx, 1, 2, -1, 0, float32(1), float32(1e-5), 0), device.ErrArgs},
		{"roll_resblock base short", d.Launch("roll_resblock", 3, big, big, big, big, big, idx, 1, 3, 0, 0, float32(1), float32(1e-5), 1), device.ErrRange},
		{"roll_resblock x short", d.Launch("roll_resblock", 2, big, big, big, big, big, idx, 8, 9, 0, 0, float32(1), float32(1e-5), 0), device.ErrRange},
		{"roll_finish want_u 2", d.Launch("roll_finish", 1, big, big, big, big, big, idx, idx, idx, idx, big, big, big, big, big, idx,
			1, 1, 1, 1, 2, 0, float32(1)), device.ErrArgs},
		{"roll_finish negative out_off", d.Launch("roll_finish", 1, big, big, big, big, big, idx, idx, idx, idx, big, big, big, big, big, idx,
			1, 1, 1, 1, 0, -1, float32(1)), device.ErrArgs},
		{"roll_finish o short", d.Launch("roll_finish", 1, big, big, big, big, big, idx, idx, idx, idx, big, big, big, big, big, idx,
			1, 1, 1, 20, 0, 0, float32(1)), device.ErrRange},
		{"roll_finish pidx short", d.Launch("roll_finish", 1, big, big, big, big, big, idx, idx, idx, idx, big, big, big, big, big, idx,
			1, 5, 1, 1, 0, 0, float32(1)), device.ErrRange},
		{"roll_finish next short", d.Launch("roll_finish", 1, big, big, big, big, big, idx, idx, idx, idx, big, x, big, big, big, idx,
			8, 1, 1, 1, 0, 1, float32(1)), device.ErrRange},
		{"roll_gather_cols n not rows of w", d.Launch("roll_gather_cols", 10, big, big, idx, 3, 4, 4, 4), device.ErrArgs},
		{"roll_gather_cols ldd < rows", d.Launch("roll_gather_cols", 4, big, big, idx, 1, 3, 4, 4), device.ErrArgs},
		{"roll_gather_cols lds < rows_src", d.Launch("roll_gather_cols", 4, big, big, idx, 1, 4, 4, 5), device.ErrArgs},
		{"roll_gather_cols src short", d.Launch("roll_gather_cols", 2, big, x, idx, 2, 2, 9, 2), device.ErrRange},
		{"roll_gather_cols dst short", d.Launch("roll_gather_cols", 2, x, big, idx, 2, 10, 2, 2), device.ErrRange},
		{"roll_gather_cols idx short", d.Launch("roll_gather_cols", 5, big, big, idx, 1, 5, 5, 5), device.ErrRange},
		{"roll_push m 0", d.Launch("roll_push", 1, big, big, idx, idx, big, idx, 1, 1, 0, 1, 0), device.ErrArgs},
		{"roll_push window short", d.Launch("roll_push", 1, x, big, idx, idx, big, idx, 3, 1, 4, 1, 0), device.ErrRange},
		{"roll_push lens short", d.Launch("roll_push", 1, big, big, idx, idx, big, idx, 1, 1, 1, 5, 0), device.ErrRange},
		{"roll_push next short", d.Launch("roll_push", 1, big, big, idx, idx, x, idx, 5, 1, 1, 1, 2), device.ErrRange},
		{"roll_resblock gamma short", d.Launch("roll_resblock", 1, big, big, big, x, big, idx, 11, 1, 0, 0, float32(1), float32(1e-5), 0), device.ErrRange},
		{"negative n", d.Launch("fill", -1, x, float32(1)), device.ErrRange},
		{"freed buffer launch", d.Launch("fill", 10, freed, float32(1)), device.ErrFreed},
		{"freed buffer upload", d.Upload(freed, make([]float32, 1)), device.ErrFreed},
		{"freed buffer download", d.Download(make([]float32, 1), freed), device.ErrFreed},
		{"double free", d.Free(freed), device.ErrFreed},
		{"foreign buffer", d.Launch("fill", 10, alien{}, float32(1)), device.ErrForeign},
		{"foreign free", d.Free(alien{}), device.ErrForeign},
		{"upload too long", d.Upload(x, make([]float32, 11)), device.ErrRange},
		{"download too long", d.Download(make([]float32, 11), x), device.ErrRange},
		{"upload int32 into float32", d.UploadInt32(x, make([]int32, 1)), device.ErrType},
		{"download float32 from int32", d.Download(make([]float32, 1), idx), device.ErrType},
		{"alloc negative", allocErr(d, device.Float32, -1), device.ErrRange},
		{"alloc bad type", allocErr(d, device.Type(9), 1), device.ErrType},
		{"gemm lda", d.Gemm(false, false, 3, 3, 3, 1, x, 2, y, 3, 0, h.alloc(device.Float32, 9), 3), device.ErrInvalidShape},
		{"gemm A short", d.Gemm(false, false, 4, 2, 3, 1, x, 4, y, 3, 0, h.alloc(device.Float32, 8), 4), device.ErrRange},
		{"gemm C short", d.Gemm(false, false, 3, 3, 3, 1, x, 3, y, 3, 0, h.alloc(device.Float32, 8), 3), device.ErrRange},
		{"gemm transposed B short", d.Gemm(false, true, 2, 4, 3, 1, x, 2, y, 4, 0, h.alloc(device.Float32, 8), 2), device.ErrRange},
		{"gemm alias", d.Gemm(false, false, 3, 3, 3, 1, x, 3, y, 3, 0, x, 3), device.ErrArgs},
		{"gemm int32", d.Gemm(false, false, 2, 2, 1, 1, idx, 2, y, 1, 0, x, 2), device.ErrType},
		{"gemm negative", d.Gemm(false, false, -1, 2, 1, 1, x, 2, y, 1, 0, h.alloc(device.Float32, 8), 2), device.ErrInvalidShape},
		{"gemm freed", d.Gemm(false, false, 1, 1, 1, 1, freed, 1, y, 1, 0, x, 1), device.ErrFreed},
		// Batched: 2x2 products with k = 1 need 2 elements of A and B, 4 of
		// C; x and y hold 10.
		{"batched last A past the end", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 3, y, 1, 2, 0,
			h.alloc(device.Float32, 16), 2, 4, 4), device.ErrRange},
		{"batched last B past the end", d.GemmStridedBatched(false, false, 2, 2, 1, 1, y, 2, 2, x, 1, 5, 0,
			h.alloc(device.Float32, 12), 2, 4, 3), device.ErrRange},
		{"batched last C past the end", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 2, y, 1, 2, 0,
			h.alloc(device.Float32, 15), 2, 4, 4), device.ErrRange},
		// Bᵀ [1, 2] (ld 2) spans 3 elements, B [2, 1] would span 2: the
		// third at 8 fits only untransposed.
		{"batched transposed B past the end", d.GemmStridedBatched(false, true, 2, 1, 2, 1, y, 2, 0, x, 2, 4, 0,
			h.alloc(device.Float32, 6), 2, 2, 3), device.ErrRange},
		{"batched negative stride", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, -2, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 4, 3), device.ErrInvalidShape},
		{"batched C overlaps", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 2, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 3, 3), device.ErrArgs},
		{"batched C shared", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 2, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 0, 3), device.ErrArgs},
		{"batched negative count", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 2, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 4, -1), device.ErrInvalidShape},
		{"batched lda", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 1, 2, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 4, 3), device.ErrInvalidShape},
		{"batched alias", d.GemmStridedBatched(false, false, 2, 2, 1, 1, x, 2, 2, y, 1, 2, 0, y, 2, 4, 2),
			device.ErrArgs},
		{"batched int32", d.GemmStridedBatched(false, false, 2, 2, 1, 1, idx, 2, 1, y, 1, 2, 0,
			h.alloc(device.Float32, 12), 2, 4, 2), device.ErrType},
		{"batched freed", d.GemmStridedBatched(false, false, 1, 1, 1, 1, freed, 1, 1, y, 1, 1, 0, x, 1, 1, 2),
			device.ErrFreed},
		{"batched foreign", d.GemmStridedBatched(false, false, 1, 1, 1, 1, x, 1, 1, alien{}, 1, 1, 0, y, 1, 1, 2),
			device.ErrForeign},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, c.err, c.want)
		}
	}
	// Nothing above may have run: x is still zero.
	got := h.down(x)
	for i, v := range got {
		if v != 0 {
			t.Fatalf("x[%d] = %v after failed launches, want 0", i, v)
		}
	}
	// n = 0 launches every kernel's nothing.
	if err := d.Launch("fill", 0, x, float32(1)); err != nil {
		t.Errorf("fill over 0: %v", err)
	}
}

func allocErr(d device.Device, t device.Type, n int) error {
	b, err := d.Alloc(t, n)
	if err == nil {
		_ = d.Free(b)
	}
	return err
}

// TestClose checks that a closed device refuses work. It closes d.
func TestClose(t *testing.T, d device.Device) {
	x, err := d.Alloc(device.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for name, err := range map[string]error{
		"alloc":  allocErr(d, device.Float32, 1),
		"launch": d.Launch("fill", 4, x, float32(1)),
		"upload": d.Upload(x, make([]float32, 4)),
		"sync":   d.Sync(),
		"close":  d.Close(),
	} {
		if !errors.Is(err, device.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

// Run runs the whole suite on d (it leaves d open).
func Run(t *testing.T, d device.Device, o Options) {
	t.Run("kernels", func(t *testing.T) { testKernels(t, d, o) })
	t.Run("gemm", func(t *testing.T) { testGemm(t, d, o) })
	t.Run("gemm_batched", func(t *testing.T) { testGemmBatched(t, d, o) })
	t.Run("copies", func(t *testing.T) { testCopies(t, d) })
	t.Run("errors", func(t *testing.T) { testErrors(t, d) })
	if c, ok := d.(device.Capturer); ok {
		t.Run("capture", func(t *testing.T) { testCapture(t, c) })
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("sync after the suite: %v", err)
	}
}
