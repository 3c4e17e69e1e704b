// Package nn trains networks whose weights, optimiser state and
// activations stay on a device.Device: for now an MLP with ReLU hidden
// layers, a mean-squared-error loss and Adam (PyTorch's semantics, as
// models.Adam), the shape of a SAC critic's update. One Step is a
// fixed sequence of kernel launches and matrix products with no copy to or
// from the host, so it runs the same on device/emu and device/cuda.
//
// Layouts follow package models: a batch is row-major [batch, features], a
// layer's W is row-major [in, out] and B is [out]. Row-major [r, c] is
// column-major [c, r], so the forward product Y = X·W is Gemm(N, N) with
// m = out, n = batch, k = in.
package nn
