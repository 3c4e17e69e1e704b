package datasets

import (
	"fmt"

	"gonum.org/v1/hdf5"
)

// ReadD4RL reads a D4RL HDF5 file: observations, actions, rewards,
// terminals, timeouts and next_observations (required), infos/qpos,
// infos/qvel and infos/action_log_probs (optional) and string or scalar
// metadata (attributes of the file and of metadata/, and datasets below
// metadata/). Float arrays of any float or integer type are converted to
// float32; terminals and timeouts may be h5py bools (one-byte enums),
// integers or floats holding 0 and 1. The result is checked for consistent
// lengths and finite values; check it against a task with Validate.
func ReadD4RL(path string) (*Dataset, error) {
	return readNamed("D4RL file", path, readD4RL)
}

func readD4RL(path string) (*Dataset, error) {
	f, closeFile, err := openH5(path)
	if err != nil {
		return nil, err
	}
	defer closeFile()

	var obs, next, act, rew array
	for _, req := range []struct {
		name string
		read func(h5loc, string) (array, error)
		into *array
	}{
		{"observations", readMatrix, &obs},
		{"next_observations", readMatrix, &next},
		{"actions", readMatrix, &act},
		{"rewards", readVector, &rew},
	} {
		if *req.into, err = req.read(f, req.name); err != nil {
			return nil, err
		}
	}
	d := &Dataset{N: obs.rows, ObsDim: obs.cols, Obs: obs.data}
	if err := sameRows(d.N, next, act, rew); err != nil {
		return nil, err
	}
	if next.cols != d.ObsDim {
		return nil, fmt.Errorf("next_observations are %d wide, observations %d", next.cols, d.ObsDim)
	}
	d.NextObs, d.Act, d.ActDim, d.Rew = next.data, act.data, act.cols, rew.data

	if d.Terminal, err = readFlags(f, "terminals", d.N); err != nil {
		return nil, err
	}
	if d.Timeout, err = readFlags(f, "timeouts", d.N); err != nil {
		return nil, err
	}

	for _, info := range []struct {
		name string
		read func(h5loc, string) (array, error)
		set  func(array)
	}{
		{"infos/qpos", readMatrix, func(m array) { d.QPos, d.QPosDim = m.data, m.cols }},
		{"infos/qvel", readMatrix, func(m array) { d.QVel, d.QVelDim = m.data, m.cols }},
		{"infos/action_log_probs", readVector, func(m array) { d.LogProb = m.data }},
	} {
		if err := readOptional(f, d.N, info.name, info.read, info.set); err != nil {
			return nil, err
		}
	}

	if d.Meta, err = readMeta(f); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return d, nil
}

// h5loc is an HDF5 file or group: where datasets are opened by path.
type h5loc interface {
	hid
	OpenDataset(name string) (*hdf5.Dataset, error)
}

// array is a float32 array read from a file with its row and column counts.
type array struct {
	name       string
	data       []float32
	rows, cols int
}

// sameRows checks that every array has n rows.
// readOptional reads the array called name with read when the file has it
// and hands it to set after checking that it has n rows.
func readOptional(f h5loc, n int, name string, read func(h5loc, string) (array, error), set func(array)) error {
	ok, err := h5linkExists(f, name)
	if err != nil || !ok {
		return err
	}
	m, err := read(f, name)
	if err != nil {
		return err
	}
	if err := sameRows(n, m); err != nil {
		return err
	}
	set(m)
	return nil
}

func sameRows(n int, arrs ...array) error {
	for _, a := range arrs {
		if a.rows != n {
			return fmt.Errorf("length mismatch: %s has %d rows, observations has %d", a.name, a.rows, n)
		}
	}
	return nil
}

// openData opens a required dataset, with a clear error when it is missing.
func openData(f h5loc, name string) (*hdf5.Dataset, []uint, typeInfo, error) {
	ok, err := h5linkExists(f, name)
	if err != nil {
		return nil, nil, typeInfo{}, err
	}
	if !ok {
		return nil, nil, typeInfo{}, fmt.Errorf("missing dataset %q", name)
	}
	ds, err := f.OpenDataset(name)
	if err != nil {
		return nil, nil, typeInfo{}, h5wrap(fmt.Errorf("%s is not a readable dataset: %w", name, err))
	}
	info, err := h5typeInfo(ds, false)
	if err != nil {
		ds.Close()
		return nil, nil, typeInfo{}, fmt.Errorf("%s: %w", name, err)
	}
	space := ds.Space()
	if space == nil {
		ds.Close()
		return nil, nil, typeInfo{}, h5wrap(fmt.Errorf("%s: cannot get its shape", name))
	}
	// SimpleExtentDims indexes its result, so a rank-0 space (a scalar or
	// an empty H5S_NULL one) must be refused before it is called.
	rank := space.SimpleExtentNDims()
	if rank < 1 {
		err := fmt.Errorf("%s is a scalar, want an array", name)
		if rank < 0 {
			err = h5wrap(fmt.Errorf("%s: cannot get its rank", name))
		} else if space.SimpleExtentType() == hdf5.S_NULL {
			err = fmt.Errorf("%s is empty (a null dataspace), want an array", name)
		}
		space.Close()
		ds.Close()
		return nil, nil, typeInfo{}, err
	}
	dims, _, err := space.SimpleExtentDims()
	space.Close()
	if err != nil {
		ds.Close()
		return nil, nil, typeInfo{}, h5wrap(fmt.Errorf("%s: cannot get its shape: %w", name, err))
	}
	return ds, dims, info, nil
}

// readFloats reads a float or integer dataset as float32 after checking
// its shape with shapeOK (want describes the shape wanted), so that a
// dataset of the wrong rank is refused before it is read.
func readFloats(f h5loc, name string, shapeOK func([]uint) bool, want string) ([]float32, []uint, error) {
	ds, dims, info, err := openData(f, name)
	if err != nil {
		return nil, nil, err
	}
	defer ds.Close()
	if !shapeOK(dims) {
		return nil, nil, fmt.Errorf("%s has shape %v, want %s", name, dims, want)
	}
	if info.class != hdf5.T_FLOAT && info.class != hdf5.T_INTEGER {
		return nil, nil, fmt.Errorf("%s is stored as %s, want a float array", name, className(info.class))
	}
	buf := make([]float32, product(dims))
	if err := h5read(ds, false, memF32, buf); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return buf, dims, nil
}

// readMatrix reads a 2-D float dataset.
func readMatrix(f h5loc, name string) (array, error) {
	data, dims, err := readFloats(f, name, func(d []uint) bool { return len(d) == 2 }, "(N, width)")
	if err != nil {
		return array{}, err
	}
	return array{name: name, data: data, rows: int(dims[0]), cols: int(dims[1])}, nil
}

// readVector reads a float dataset of shape (N,) or (N, 1).
func readVector(f h5loc, name string) (array, error) {
	data, dims, err := readFloats(f, name, isVector, "(N,) or (N, 1)")
	if err != nil {
		return array{}, err
	}
	return array{name: name, data: data, rows: int(dims[0]), cols: 1}, nil
}

// readFlags reads a flag dataset of shape (N,) or (N, 1) holding 0 and 1:
// h5py's enum bool, any integer, or a float.
func readFlags(f h5loc, name string, n int) ([]bool, error) {
	ds, dims, info, err := openData(f, name)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	if !isVector(dims) {
		return nil, fmt.Errorf("%s has shape %v, want (N,) or (N, 1)", name, dims)
	}
	if int(dims[0]) != n {
		return nil, fmt.Errorf("length mismatch: %s has %d rows, observations has %d", name, dims[0], n)
	}
	var vals []float64
	switch {
	case (info.class == hdf5.T_ENUM || info.class == hdf5.T_INTEGER) && info.size == 1:
		vals, err = h5readFloat64s[uint8](ds, memNativeOfFile, n)
	case info.class == hdf5.T_INTEGER:
		vals, err = h5readFloat64s[int64](ds, memI64, n)
	case info.class == hdf5.T_FLOAT:
		vals, err = h5readFloat64s[float64](ds, memF64, n)
	default:
		return nil, fmt.Errorf("%s is stored as %s (%d bytes), want bool", name, className(info.class), info.size)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	flags := make([]bool, n)
	for i, v := range vals {
		switch v {
		case 0:
		case 1:
			flags[i] = true
		default:
			return nil, fmt.Errorf("%s[%d] = %v, want 0 or 1", name, i, v)
		}
	}
	return flags, nil
}

func isVector(dims []uint) bool {
	return len(dims) == 1 || (len(dims) == 2 && dims[1] == 1)
}

func product(dims []uint) int {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	return n
}

// className names an HDF5 type class.
func className(c hdf5.TypeClass) string {
	switch c {
	case hdf5.T_INTEGER:
		return "integer"
	case hdf5.T_FLOAT:
		return "float"
	case hdf5.T_STRING:
		return "string"
	case hdf5.T_BITFIELD:
		return "bitfield"
	case hdf5.T_OPAQUE:
		return "opaque"
	case hdf5.T_COMPOUND:
		return "compound"
	case hdf5.T_REFERENCE:
		return "reference"
	case hdf5.T_ENUM:
		return "enum"
	case hdf5.T_VLEN:
		return "variable-length"
	case hdf5.T_ARRAY:
		return "array"
	}
	return fmt.Sprintf("type class %d", int(c))
}
