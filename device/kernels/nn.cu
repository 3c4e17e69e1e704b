// Kernels of a dense layer's forward and backward pass. Matrices are
// row-major [rows, cols] (a batch of rows), as package models stores them.
#include "kernel.h"

// bias_add: y[r, c] += b[c]; n = rows·cols.
KERNEL bias_add(int n, float *__restrict__ y, const float *__restrict__ b, int cols) {
	GRID_STRIDE(i, n) { y[i] += b[i % cols]; }
}

// bias_relu: y[r, c] = max(y[r, c] + b[c], 0); n = rows·cols.
KERNEL bias_relu(int n, float *__restrict__ y, const float *__restrict__ b, int cols) {
	GRID_STRIDE(i, n) {
		float v = y[i] + b[i % cols];
		y[i] = v > 0.0f ? v : 0.0f;
	}
}

// relu_grad: dy[i] = 0 where the ReLU's output y[i] is not positive (the
// gradient through y = max(x, 0), taken as 0 at x = 0 like PyTorch).
KERNEL relu_grad(int n, float *__restrict__ dy, const float *__restrict__ y) {
	GRID_STRIDE(i, n) {
		if (!(y[i] > 0.0f)) {
			dy[i] = 0.0f;
		}
	}
}

// col_sum: out[c] = Σ_r x[r, c] over rows rows; n = cols (one thread per
// column, so neighbouring threads read neighbouring addresses). It gives a
// layer's bias gradient from the gradient of its output.
KERNEL col_sum(int n, const float *__restrict__ x, float *__restrict__ out, int rows) {
	GRID_STRIDE(c, n) {
		float s = 0.0f;
		for (int r = 0; r < rows; r++) {
			s += x[r * n + c];
		}
		out[c] = s;
	}
}

// mse_grad: grad[i] = scale·(pred[i] - target[i]); scale = 2/count gives
// the gradient of the mean squared error over count elements.
KERNEL mse_grad(int n, const float *__restrict__ pred, const float *__restrict__ target, float *__restrict__ grad,
                float scale) {
	GRID_STRIDE(i, n) { grad[i] = scale * (pred[i] - target[i]); }
}

// sq_err: out[i] = (pred[i] - target[i])²; col_sum over it gives the loss.
KERNEL sq_err(int n, const float *__restrict__ pred, const float *__restrict__ target, float *__restrict__ out) {
	GRID_STRIDE(i, n) {
		float d = pred[i] - target[i];
		out[i] = d * d;
	}
}
