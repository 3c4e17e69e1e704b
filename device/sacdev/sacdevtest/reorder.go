package sacdevtest

import (
	"fmt"

	"github.com/admpo/admpo/device"
)

// Reordered wraps d so that Gemm and GemmStridedBatched accumulate in
// float64 and round once: the same products as d's, summed in another
// order and precision, as a GPU's cuBLAS sums them differently from
// OpenBLAS. Compare on it shows on the CPU how far rounding alone moves a
// SAC update from sac.Agent's, which is what Options must allow on a GPU.
func Reordered(d device.Device) device.Device { return reordered{d} }

type reordered struct{ device.Device }

func (r reordered) Name() string { return r.Device.Name() + " (float64 gemm)" }

func (r reordered) Gemm(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda int,
	b device.Buffer, ldb int, beta float32, c device.Buffer, ldc int) error {
	if err := device.CheckGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return fmt.Errorf("reordered: %w", err)
	}
	return r.products(transA, transB, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1)
}

func (r reordered) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda,
	strideA int, b device.Buffer, ldb, strideB int, beta float32, c device.Buffer, ldc, strideC int, batch int) error {
	if err := device.CheckGemmStridedBatched(transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c, ldc,
		strideC, batch); err != nil {
		return fmt.Errorf("reordered: %w", err)
	}
	return r.products(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// products computes checked batched products in float64 on the host.
func (r reordered) products(transA, transB bool, m, n, k int, alpha float32, a device.Buffer, lda, strideA int,
	b device.Buffer, ldb, strideB int, beta float32, c device.Buffer, ldc, strideC int, batch int) error {
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	av, bv, cv := make([]float32, a.Len()), make([]float32, b.Len()), make([]float32, c.Len())
	for _, x := range []struct {
		dst []float32
		src device.Buffer
	}{{av, a}, {bv, b}, {cv, c}} {
		if err := r.Download(x.dst, x.src); err != nil {
			return fmt.Errorf("reordered: %w", err)
		}
	}
	for p := range batch {
		oa, ob, oc := p*strideA, p*strideB, p*strideC
		for j := range n {
			for i := range m {
				s := 0.0
				for l := range k {
					ai := oa + i + l*lda
					if transA {
						ai = oa + l + i*lda
					}
					bi := ob + l + j*ldb
					if transB {
						bi = ob + j + l*ldb
					}
					s += float64(av[ai]) * float64(bv[bi])
				}
				ci := oc + i + j*ldc
				v := float64(alpha) * s
				if beta != 0 {
					v += float64(beta) * float64(cv[ci])
				}
				cv[ci] = float32(v)
			}
		}
	}
	if err := r.Upload(c, cv); err != nil {
		return fmt.Errorf("reordered: %w", err)
	}
	return nil
}
