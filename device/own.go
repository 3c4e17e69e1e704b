package device

import "fmt"

// Own is an implementation's test that b is its own live buffer; it
// returns b as the implementation's buffer type, or an error naming op.
type Own[B any] func(op string, b Buffer) (B, error)

// CheckLaunchOn checks a launch for an implementation: every Buffer among
// args with own, then the kernel and arguments (CheckLaunch), whose error
// is prefixed with the implementation's name prefix. It returns
// CheckLaunch's converted arguments.
func CheckLaunchOn[B any](prefix string, own Own[B], name string, n int, args ...any) ([]any, error) {
	for i, a := range args {
		if b, ok := a.(Buffer); ok {
			if _, err := own("launch", b); err != nil {
				return nil, fmt.Errorf("%w (kernel %s, argument %d)", err, name, i)
			}
		}
	}
	_, conv, err := CheckLaunch(name, n, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	return conv, nil
}

// CheckGemmOn checks Device.Gemm's buffers a, b and c with own and then the
// shapes (CheckGemm, its error prefixed with prefix), and returns the three
// buffers as the implementation's.
func CheckGemmOn[B any](prefix string, own Own[B], transA, transB bool, m, n, k int,
	a Buffer, lda int, b Buffer, ldb int, c Buffer, ldc int) ([3]B, error) {
	var bufs [3]B
	for i, x := range []Buffer{a, b, c} {
		ob, err := own("gemm", x)
		if err != nil {
			return bufs, err
		}
		bufs[i] = ob
	}
	if err := CheckGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return bufs, fmt.Errorf("%s: %w", prefix, err)
	}
	return bufs, nil
}

// CheckGemmStridedBatchedOn is CheckGemmOn for
// Device.GemmStridedBatched (CheckGemmStridedBatched).
func CheckGemmStridedBatchedOn[B any](prefix string, own Own[B], transA, transB bool, m, n, k int,
	a Buffer, lda, strideA int, b Buffer, ldb, strideB int, c Buffer, ldc, strideC int, batch int) ([3]B, error) {
	var bufs [3]B
	for i, x := range []Buffer{a, b, c} {
		ob, err := own("gemm batched", x)
		if err != nil {
			return bufs, err
		}
		bufs[i] = ob
	}
	if err := CheckGemmStridedBatched(transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c, ldc, strideC,
		batch); err != nil {
		return bufs, fmt.Errorf("%s: %w", prefix, err)
	}
	return bufs, nil
}
