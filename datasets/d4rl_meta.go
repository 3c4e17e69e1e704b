package datasets

import (
	"fmt"
	"strconv"

	"gonum.org/v1/hdf5"
)

// maxMetaDepth bounds how deep readMeta descends below metadata/.
const maxMetaDepth = 8

// readMeta collects the string and scalar numeric metadata of a D4RL file:
// attributes of the root group and of metadata/ (keyed by attribute name) and
// datasets below metadata/ (keyed by their path below it). Arrays, such as
// the policy weights D4RL stores there, are skipped.
func readMeta(f *hdf5.File) (map[string]string, error) {
	meta := map[string]string{}
	root, err := f.OpenGroup("/")
	if err != nil {
		return nil, h5wrap(fmt.Errorf("opening the root group: %w", err))
	}
	err = readAttrs(root, "", meta)
	root.Close()
	if err != nil {
		return nil, err
	}
	if ok, err := h5linkExists(f, "metadata"); err != nil {
		return nil, err
	} else if !ok {
		return meta, nil
	}
	g, err := f.OpenGroup("metadata")
	if err != nil {
		// metadata is a dataset rather than a group: keep it if it is a scalar.
		ds, derr := f.OpenDataset("metadata")
		if derr != nil {
			return nil, h5wrap(fmt.Errorf("metadata is neither a group nor a dataset: %w", err))
		}
		defer ds.Close()
		if err := metaValue(ds, false, "metadata", meta); err != nil {
			return nil, err
		}
		return meta, nil
	}
	defer g.Close()
	if err := readAttrs(g, "", meta); err != nil {
		return nil, err
	}
	if err := readMetaGroup(g, "", 0, meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// readAttrs stores obj's string and scalar attributes under prefix+name.
func readAttrs(obj interface {
	hid
	OpenAttribute(string) (*hdf5.Attribute, error)
}, prefix string, meta map[string]string) error {
	names, err := h5attrNames(obj)
	if err != nil {
		return err
	}
	for _, n := range names {
		a, err := obj.OpenAttribute(n)
		if err != nil {
			return h5wrap(fmt.Errorf("opening attribute %q: %w", prefix+n, err))
		}
		err = metaValue(a, true, prefix+n, meta)
		a.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// readMetaGroup stores the scalar datasets below g under prefix+name,
// descending into subgroups.
func readMetaGroup(g *hdf5.Group, prefix string, depth int, meta map[string]string) error {
	if depth > maxMetaDepth {
		return nil
	}
	n, err := g.NumObjects()
	if err != nil {
		return h5wrap(fmt.Errorf("listing metadata/%s: %w", prefix, err))
	}
	for i := uint(0); i < n; i++ {
		name, err := g.ObjectNameByIndex(i)
		if err != nil {
			return h5wrap(fmt.Errorf("listing metadata/%s: %w", prefix, err))
		}
		typ, err := g.ObjectTypeByIndex(i)
		if err != nil {
			return h5wrap(fmt.Errorf("metadata/%s%s: %w", prefix, name, err))
		}
		switch typ {
		case hdf5.H5G_GROUP:
			sub, err := g.OpenGroup(name)
			if err != nil {
				return h5wrap(fmt.Errorf("opening metadata/%s%s: %w", prefix, name, err))
			}
			err = readMetaGroup(sub, prefix+name+"/", depth+1, meta)
			sub.Close()
			if err != nil {
				return err
			}
		case hdf5.H5G_DATASET:
			ds, err := g.OpenDataset(name)
			if err != nil {
				return h5wrap(fmt.Errorf("opening metadata/%s%s: %w", prefix, name, err))
			}
			err = metaValue(ds, false, prefix+name, meta)
			ds.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// metaValue stores obj's value in meta[key] if it is a string or a single
// number; other values are skipped.
func metaValue(obj hid, isAttr bool, key string, meta map[string]string) error {
	info, err := h5typeInfo(obj, isAttr)
	if err != nil {
		return fmt.Errorf("metadata %s: %w", key, err)
	}
	known := info.class == hdf5.T_STRING || info.class == hdf5.T_INTEGER || info.class == hdf5.T_FLOAT ||
		(info.class == hdf5.T_ENUM && info.size == 1)
	if !known || h5npoints(obj, isAttr) != 1 {
		return nil
	}
	var s string
	switch info.class {
	case hdf5.T_STRING:
		s, err = h5readString(obj, isAttr)
	case hdf5.T_INTEGER:
		var v int64
		v, err = h5readOne[int64](obj, isAttr, memI64)
		s = strconv.FormatInt(v, 10)
	case hdf5.T_FLOAT:
		var v float64
		v, err = h5readOne[float64](obj, isAttr, memF64)
		s = strconv.FormatFloat(v, 'g', -1, 64)
	case hdf5.T_ENUM:
		var v uint8
		v, err = h5readOne[uint8](obj, isAttr, memNativeOfFile)
		if err == nil && v > 1 {
			return nil // neither false (0) nor true (1)
		}
		s = strconv.FormatBool(v == 1)
	}
	if err != nil {
		return fmt.Errorf("metadata %s: %w", key, err)
	}
	meta[key] = s
	return nil
}
