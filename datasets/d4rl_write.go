package datasets

import (
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/hdf5"

	"github.com/admpo/admpo/internal/atomicfile"
)

// WriteD4RL writes d as a D4RL HDF5 file that h5py opens with D4RL's keys,
// dtypes and shapes: observations, next_observations, actions (float32,
// (N, width)), rewards (float32, (N,)), terminals and timeouts (h5py bool,
// (N,)), infos/qpos, infos/qvel, infos/action_log_probs when present, and
// each Meta entry as a variable-length UTF-8 string dataset metadata/<key>.
// The data set is checked first, and the file is written to a temporary file
// in the same directory and renamed into place, so a failure never leaves a
// partial file at path.
func WriteD4RL(path string, d *Dataset) error {
	if d == nil {
		return fmt.Errorf("datasets: writing %s: nil dataset", path)
	}
	if err := d.check(); err != nil {
		return fmt.Errorf("datasets: writing %s: %w", path, err)
	}
	keys, err := metaKeys(d.Meta)
	if err != nil {
		return fmt.Errorf("datasets: writing %s: %w", path, err)
	}
	err = atomicfile.WritePath(path, 0o644, func(tmp string) error { return writeD4RL(tmp, d, keys) })
	if err != nil {
		return fmt.Errorf("datasets: writing D4RL file %s: %w", path, err)
	}
	return nil
}

// metaKeys checks the metadata keys and returns them sorted.
func metaKeys(meta map[string]string) ([]string, error) {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		for _, part := range strings.Split(k, "/") {
			if part == "" || part == "." || part == ".." {
				return nil, fmt.Errorf("metadata key %q: want non-empty '/'-separated names without . or ..", k)
			}
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			if k[i] != '/' {
				continue
			}
			if _, ok := meta[k[:i]]; ok {
				return nil, fmt.Errorf("metadata keys %q and %q collide: %q would be both a value and a group", k[:i], k, k[:i])
			}
		}
	}
	return keys, nil
}

// writeD4RL writes the D4RL file name (see WriteD4RL) without checks.
func writeD4RL(name string, d *Dataset, metaKeys []string) error {
	return createH5(name, func(f *hdf5.File) error { return writeD4RLContents(f, d, metaKeys) })
}

// writeD4RLContents writes d's arrays and the metadata keys metaKeys into f.
func writeD4RLContents(f *hdf5.File, d *Dataset, metaKeys []string) error {
	n := uint(d.N)
	floats := []floatArr{
		{"observations", d.Obs, []uint{n, uint(d.ObsDim)}},
		{"actions", d.Act, []uint{n, uint(d.ActDim)}},
		{"rewards", d.Rew, []uint{n}},
		{"next_observations", d.NextObs, []uint{n, uint(d.ObsDim)}},
	}
	if d.QPos != nil || d.QVel != nil || d.LogProb != nil {
		g, err := f.CreateGroup("infos")
		if err != nil {
			return h5wrap(fmt.Errorf("creating group infos: %w", err))
		}
		g.Close()
	}
	if d.QPos != nil {
		floats = append(floats, floatArr{"infos/qpos", d.QPos, []uint{n, uint(d.QPosDim)}})
	}
	if d.QVel != nil {
		floats = append(floats, floatArr{"infos/qvel", d.QVel, []uint{n, uint(d.QVelDim)}})
	}
	if d.LogProb != nil {
		floats = append(floats, floatArr{"infos/action_log_probs", d.LogProb, []uint{n}})
	}
	for _, a := range floats {
		if err := writeArray(f, a.name, hdf5.T_NATIVE_FLOAT, a.dims, a.data); err != nil {
			return err
		}
	}
	bt, err := h5boolType()
	if err != nil {
		return err
	}
	defer bt.Close()
	if err := writeArray(f, "terminals", bt, []uint{n}, boolBytes(d.Terminal)); err != nil {
		return err
	}
	if err := writeArray(f, "timeouts", bt, []uint{n}, boolBytes(d.Timeout)); err != nil {
		return err
	}
	if len(metaKeys) > 0 {
		if err := writeMeta(f, d.Meta, metaKeys); err != nil {
			return err
		}
	}
	return nil
}

// floatArr is a float32 array to write with its name and shape.
type floatArr struct {
	name string
	data []float32
	dims []uint
}

// writeArray creates dataset name of type dtype and shape dims holding data.
func writeArray[T float32 | uint8](f *hdf5.File, name string, dtype *hdf5.Datatype, dims []uint, data []T) error {
	if n := product(dims); len(data) != n {
		return fmt.Errorf("%s: %d values for shape %v (%d)", name, len(data), dims, n)
	}
	space, err := hdf5.CreateSimpleDataspace(dims, nil)
	if err != nil {
		return h5wrap(fmt.Errorf("%s: creating dataspace %v: %w", name, dims, err))
	}
	defer space.Close()
	ds, err := f.CreateDataset(name, dtype, space)
	if err != nil {
		return h5wrap(fmt.Errorf("creating dataset %s: %w", name, err))
	}
	if err := ds.Write(&data); err != nil {
		ds.Close()
		return h5wrap(fmt.Errorf("writing dataset %s: %w", name, err))
	}
	if err := ds.Close(); err != nil {
		return h5wrap(fmt.Errorf("closing dataset %s: %w", name, err))
	}
	return nil
}

// writeMeta stores each metadata entry as a string dataset below metadata/,
// creating the groups its key names.
func writeMeta(f *hdf5.File, meta map[string]string, keys []string) error {
	made := map[string]bool{}
	mkgroup := func(p string) error {
		if made[p] {
			return nil
		}
		g, err := f.CreateGroup(p)
		if err != nil {
			return h5wrap(fmt.Errorf("creating group %s: %w", p, err))
		}
		made[p] = true
		return g.Close()
	}
	if err := mkgroup("metadata"); err != nil {
		return err
	}
	for _, k := range keys {
		parts := strings.Split(k, "/")
		for i := 1; i < len(parts); i++ {
			if err := mkgroup("metadata/" + strings.Join(parts[:i], "/")); err != nil {
				return err
			}
		}
		if err := h5writeString(f, "metadata/"+k, meta[k]); err != nil {
			return err
		}
	}
	return nil
}

func boolBytes(b []bool) []uint8 {
	out := make([]uint8, len(b))
	for i, v := range b {
		if v {
			out[i] = 1
		}
	}
	return out
}
