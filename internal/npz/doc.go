// Package npz reads and writes NumPy .npz archives (a zip of .npy arrays,
// as numpy.savez writes them) of float32, float64, int32, int64 and bool
// arrays, C order. admpo's GPU checks use it to hand captured graph inputs
// and outputs between Go and Python.
package npz
