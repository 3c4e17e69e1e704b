package datasets

import (
	"testing"

	"gonum.org/v1/hdf5"
)

// rawArr is one dataset for writeRawH5: float32 or uint8 values and a shape.
type rawArr struct {
	dims []uint
	f32  []float32
	u8   []uint8
}

// writeRawH5 writes arbitrary (possibly broken) D4RL-like files straight
// through gonum/hdf5, independently of WriteD4RL.
func writeRawH5(t *testing.T, path string, arrays map[string]rawArr) {
	t.Helper()
	f, err := hdf5.CreateFile(path, hdf5.F_ACC_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, a := range arrays {
		space, err := hdf5.CreateSimpleDataspace(a.dims, nil)
		if err != nil {
			t.Fatal(err)
		}
		dt := hdf5.T_NATIVE_FLOAT
		if a.u8 != nil {
			dt = hdf5.T_NATIVE_UINT8
		}
		ds, err := f.CreateDataset(name, dt, space)
		if err != nil {
			t.Fatal(err)
		}
		if a.u8 != nil {
			err = ds.Write(&a.u8)
		} else {
			err = ds.Write(&a.f32)
		}
		if err != nil {
			t.Fatal(err)
		}
		ds.Close()
		space.Close()
	}
}

// seq returns 0, 1, ..., n-1 as float32.
func seq(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}
