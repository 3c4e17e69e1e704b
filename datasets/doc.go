// Package datasets reads and writes offline reinforcement-learning data sets:
// D4RL HDF5 files (read and write, h5py-compatible), NeoRL .npz files (read),
// and computes D4RL normalised scores.
//
// All readers return a *Dataset of flat, row-major float32 arrays with one
// row per transition. Episodes end at a terminal or a timeout; transition
// pairs always use NextObs, never Obs[i+1], so no pair crosses an episode end.
//
// HDF5 access goes through gonum.org/v1/hdf5 (cgo over Debian's serial
// libhdf5-dev, whose include and library paths gonum's own #cgo lines already
// name) plus a few C helpers in h5c.go for what gonum does not wrap: typed
// reads with HDF5 conversion, h5py's enum bool type, variable-length strings,
// attribute listing and the text of HDF5's error stack.
package datasets
