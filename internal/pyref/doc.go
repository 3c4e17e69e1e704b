// Package pyref runs the Python reference scripts of admpo's tests (PyTorch,
// h5py, numpy, ONNX) with Debian's interpreter, skipping a test where a
// module it needs is not installed. Only tests import it.
package pyref
