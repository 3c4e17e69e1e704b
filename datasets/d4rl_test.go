package datasets

import (
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/pyref"
)

// randomDataset returns a seeded data set with every optional part filled.
func randomDataset(seed int64) *Dataset {
	rng := rand.New(rand.NewSource(seed))
	n, od, ad := 50, 3, 2
	fill := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	d := &Dataset{N: n, ObsDim: od, ActDim: ad,
		Obs: fill(n * od), NextObs: fill(n * od), Act: fill(n * ad), Rew: fill(n),
		Terminal: make([]bool, n), Timeout: make([]bool, n),
		QPos: fill(n * 4), QPosDim: 4, QVel: fill(n * 3), QVelDim: 3, LogProb: fill(n),
		Meta: map[string]string{"algorithm": "SAC", "policy/nonlinearity": "relu", "env": "hopper-medium-v2"},
	}
	d.Terminal[9], d.Terminal[30] = true, true
	d.Timeout[19], d.Timeout[49] = true, true
	return d
}

// writeRandomD4RL writes randomDataset(seed) as the D4RL file name in a new
// temporary directory and returns the file's path and the data set.
func writeRandomD4RL(t *testing.T, name string, seed int64) (string, *Dataset) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	d := randomDataset(seed)
	if err := WriteD4RL(p, d); err != nil {
		t.Fatal(err)
	}
	return p, d
}

func TestD4RLRoundTrip(t *testing.T) {
	p, want := writeRandomD4RL(t, "rt.hdf5", 1)
	dir := filepath.Dir(p)
	got, err := ReadD4RL(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, want)
	}
	onlyFiles(t, dir, "rt.hdf5")

	// Without the optional parts, and overwriting the existing file.
	want = randomDataset(2)
	want.QPos, want.QPosDim, want.QVel, want.QVelDim, want.LogProb = nil, 0, nil, 0, nil
	want.Meta = map[string]string{}
	if err := WriteD4RL(p, want); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadD4RL(p); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip without optional parts differs:\n got %+v\nwant %+v", got, want)
	}
	onlyFiles(t, dir, "rt.hdf5")
}

// h5pyFixture writes, with h5py, what D4RL files hold: float32 arrays, bool
// terminals/timeouts, infos/qpos, string and numeric metadata as attributes
// and datasets, and an array (policy weights) that the reader skips. Values
// are dyadic fractions of the row and column so Go can recompute them.
const h5pyFixture = `
import sys, h5py, numpy as np
N, D, A, Q = 7, 3, 2, 4
i = np.arange(N, dtype=np.float64)[:, None]
obs = (i / 2 - np.arange(D)[None, :] / 4).astype(np.float32)
act = (i / 8 - np.arange(A)[None, :] / 4).astype(np.float32)
rew = ((2 * np.arange(N) - 3) / 4).astype(np.float32)
qpos = (i * 3 + np.arange(Q)[None, :] / 16).astype(np.float32)
term = np.array([0, 0, 1, 0, 0, 0, 0], dtype=bool)
tout = np.array([0, 0, 0, 0, 0, 1, 0], dtype=bool)
with h5py.File(sys.argv[1], "w") as f:
    f["observations"] = obs
    f["next_observations"] = obs + np.float32(0.125)
    f["actions"] = act
    f["rewards"] = rew
    f["terminals"] = term
    f["timeouts"] = tout
    f["infos/qpos"] = qpos
    f.attrs["env_name"] = "hopper-medium-v2"
    f.attrs["seed"] = np.int64(42)
    f["metadata/algorithm"] = "SAC"
    f["metadata/iteration"] = np.int64(3)
    f["metadata/policy/fc0/weight"] = np.zeros((4, 3), np.float32)
    f["metadata/policy/nonlinearity"] = np.bytes_(b"relu")
    f["metadata"].attrs["score"] = 1.5
# A variant with other stored types: float64 arrays, (N, 1) rewards,
# int64 terminals and float32 timeouts.
with h5py.File(sys.argv[2], "w") as f:
    f["observations"] = obs.astype(np.float64)
    f["next_observations"] = (obs + np.float32(0.125)).astype(np.float64)
    f["actions"] = act.astype(np.float64)
    f["rewards"] = rew.astype(np.float64)[:, None]
    f["terminals"] = term.astype(np.int64)
    f["timeouts"] = tout.astype(np.float32)
`

// fixtureWant recomputes h5pyFixture's arrays in Go.
func fixtureWant() *Dataset {
	n, od, ad, q := 7, 3, 2, 4
	d := &Dataset{N: n, ObsDim: od, ActDim: ad, QPosDim: q,
		Terminal: []bool{false, false, true, false, false, false, false},
		Timeout:  []bool{false, false, false, false, false, true, false}}
	for i := 0; i < n; i++ {
		for j := 0; j < od; j++ {
			v := float32(float64(i)/2 - float64(j)/4)
			d.Obs = append(d.Obs, v)
			d.NextObs = append(d.NextObs, v+0.125)
		}
		for j := 0; j < ad; j++ {
			d.Act = append(d.Act, float32(float64(i)/8-float64(j)/4))
		}
		d.Rew = append(d.Rew, float32(float64(2*i-3)/4))
		for j := 0; j < q; j++ {
			d.QPos = append(d.QPos, float32(float64(i)*3+float64(j)/16))
		}
	}
	return d
}

func TestD4RLReadsH5pyFixture(t *testing.T) {
	pyref.Need(t, "h5py", "numpy")
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "d4rl.hdf5"), filepath.Join(dir, "variant.hdf5")
	pyref.Run(t, h5pyFixture, p1, p2)

	got, err := ReadD4RL(p1)
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureWant()
	want.Meta = map[string]string{
		"env_name": "hopper-medium-v2", "seed": "42", "score": "1.5",
		"algorithm": "SAC", "iteration": "3", "policy/nonlinearity": "relu",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("h5py fixture read as\n%+v\nwant\n%+v", got, want)
	}
	wantEps := []Episode{{0, 3, true, false}, {3, 6, false, true}, {6, 7, false, false}}
	if eps := got.Episodes(); !reflect.DeepEqual(eps, wantEps) {
		t.Fatalf("episodes %+v, want %+v", eps, wantEps)
	}

	got, err = ReadD4RL(p2)
	if err != nil {
		t.Fatal(err)
	}
	want = fixtureWant()
	want.QPos, want.QPosDim = nil, 0
	want.Meta = map[string]string{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("variant fixture read as\n%+v\nwant\n%+v", got, want)
	}
}

// h5pyInspect prints, as JSON, what h5py sees in a file: per dataset its
// dtype, shape, values and whether its stored type equals h5py's own bool
// type; and the metadata strings.
const h5pyInspect = `
import sys, json, h5py, numpy as np
out = {"arrays": {}, "meta": {}}
booltype = h5py.h5t.py_create(np.dtype(bool))
with h5py.File(sys.argv[1], "r") as f:
    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        if name.startswith("metadata/"):
            v = obj[()]
            out["meta"][name[len("metadata/"):]] = v.decode() if isinstance(v, bytes) else str(v)
            return
        out["arrays"][name] = {
            "dtype": str(obj.dtype), "shape": list(obj.shape),
            "values": np.asarray(obj[()], dtype=np.float64).ravel().tolist(),
            "h5py_bool_type": bool(obj.id.get_type() == booltype),
        }
    f.visititems(visit)
print(json.dumps(out))
`

func TestD4RLWrittenFileOpensInH5py(t *testing.T) {
	pyref.Need(t, "h5py", "numpy")
	p, d := writeRandomD4RL(t, "admpo.hdf5", 3)
	var seen struct {
		Arrays map[string]struct {
			Dtype        string
			Shape        []int
			Values       []float64
			H5pyBoolType bool `json:"h5py_bool_type"`
		}
		Meta map[string]string
	}
	if err := json.Unmarshal([]byte(pyref.Run(t, h5pyInspect, p)), &seen); err != nil {
		t.Fatal(err)
	}
	type spec struct {
		dtype string
		shape []int
		vals  []float32
	}
	n := d.N
	b2f := func(b []bool) []float32 {
		out := make([]float32, len(b))
		for i, v := range b {
			if v {
				out[i] = 1
			}
		}
		return out
	}
	want := map[string]spec{
		"observations":           {"float32", []int{n, d.ObsDim}, d.Obs},
		"next_observations":      {"float32", []int{n, d.ObsDim}, d.NextObs},
		"actions":                {"float32", []int{n, d.ActDim}, d.Act},
		"rewards":                {"float32", []int{n}, d.Rew},
		"terminals":              {"bool", []int{n}, b2f(d.Terminal)},
		"timeouts":               {"bool", []int{n}, b2f(d.Timeout)},
		"infos/qpos":             {"float32", []int{n, d.QPosDim}, d.QPos},
		"infos/qvel":             {"float32", []int{n, d.QVelDim}, d.QVel},
		"infos/action_log_probs": {"float32", []int{n}, d.LogProb},
	}
	if len(seen.Arrays) != len(want) {
		t.Errorf("h5py sees %d arrays, want %d", len(seen.Arrays), len(want))
	}
	for name, w := range want {
		g, ok := seen.Arrays[name]
		if !ok {
			t.Errorf("h5py does not see %s", name)
			continue
		}
		if g.Dtype != w.dtype || !reflect.DeepEqual(g.Shape, w.shape) {
			t.Errorf("%s: h5py sees %s %v, want %s %v", name, g.Dtype, g.Shape, w.dtype, w.shape)
		}
		if g.H5pyBoolType != (w.dtype == "bool") {
			t.Errorf("%s: stored type equals h5py's bool type: %v", name, g.H5pyBoolType)
		}
		if len(g.Values) != len(w.vals) {
			t.Errorf("%s: %d values, want %d", name, len(g.Values), len(w.vals))
			continue
		}
		for i, v := range g.Values {
			if float32(v) != w.vals[i] {
				t.Errorf("%s[%d] = %v in h5py, want %v", name, i, v, w.vals[i])
				break
			}
		}
	}
	if !reflect.DeepEqual(seen.Meta, d.Meta) {
		t.Errorf("h5py sees metadata %v, want %v", seen.Meta, d.Meta)
	}
}

func TestD4RLTruncatedAndCorrupt(t *testing.T) {
	p, _ := writeRandomD4RL(t, "cut.hdf5", 4)
	dir := filepath.Dir(p)
	truncateHalf(t, p)
	_, err := ReadD4RL(p)
	wantErr(t, err, p, "corrupt or truncated", "truncated file")

	// Overwritten signature.
	if err := WriteD4RL(p, randomDataset(4)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	copy(raw, "garbage!")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadD4RL(p)
	wantErr(t, err, p, "not an HDF5 file")

	// Overwritten root-group header (just after the 96-byte superblock).
	if err := WriteD4RL(p, randomDataset(4)); err != nil {
		t.Fatal(err)
	}
	if raw, err = os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	for i := 96; i < 512; i++ {
		raw[i] = 0xAB
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadD4RL(p)
	wantErr(t, err, p, "corrupt")

	empty := filepath.Join(dir, "empty.hdf5")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadD4RL(empty)
	wantErr(t, err, empty, "not an HDF5 file")

	_, err = ReadD4RL(filepath.Join(dir, "absent.hdf5"))
	wantErr(t, err, "absent.hdf5", "no such file")
	_, err = ReadD4RL(dir)
	wantErr(t, err, dir, "is a directory")
}

func TestD4RLBadContents(t *testing.T) {
	dir := t.TempDir()
	n := 10
	base := func() map[string]rawArr {
		return map[string]rawArr{
			"observations":      {dims: []uint{uint(n), 3}, f32: seq(n * 3)},
			"next_observations": {dims: []uint{uint(n), 3}, f32: seq(n * 3)},
			"actions":           {dims: []uint{uint(n), 2}, f32: seq(n * 2)},
			"rewards":           {dims: []uint{uint(n)}, f32: seq(n)},
			"terminals":         {dims: []uint{uint(n)}, u8: make([]uint8, n)},
			"timeouts":          {dims: []uint{uint(n)}, u8: make([]uint8, n)},
		}
	}
	// The baseline itself reads (1-byte integer flags are accepted).
	p := filepath.Join(dir, "ok.hdf5")
	writeRawH5(t, p, base())
	d, err := ReadD4RL(p)
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	if d.N != n || d.ObsDim != 3 || d.ActDim != 2 || d.Obs[7] != 7 {
		t.Fatalf("baseline read wrong: N %d obs %d act %d obs[7] %v", d.N, d.ObsDim, d.ActDim, d.Obs[7])
	}
	// Wrong observation width for the task.
	wantErr(t, d.Validate(11, 2), "observations are 3 wide, the task wants 11")
	wantErr(t, d.Validate(3, 6), "actions are 2 wide, the task wants 6")

	for _, key := range []string{"observations", "next_observations", "actions", "rewards", "terminals", "timeouts"} {
		m := base()
		delete(m, key)
		p := filepath.Join(dir, "no-"+key+".hdf5")
		writeRawH5(t, p, m)
		_, err := ReadD4RL(p)
		wantErr(t, err, p, `missing dataset "`+key+`"`)
	}
	nan := base()
	nan["observations"].f32[3*3+1] = float32(math.NaN())
	inf := base()
	inf["next_observations"].f32[5*3+2] = float32(math.Inf(1))
	cases := []struct {
		name  string
		edit  func(m map[string]rawArr)
		parts []string
	}{
		{"short-rewards", func(m map[string]rawArr) { m["rewards"] = rawArr{dims: []uint{9}, f32: seq(9)} },
			[]string{"length mismatch: rewards has 9 rows, observations has 10"}},
		{"short-actions", func(m map[string]rawArr) { m["actions"] = rawArr{dims: []uint{8, 2}, f32: seq(16)} },
			[]string{"length mismatch: actions has 8 rows"}},
		{"short-terminals", func(m map[string]rawArr) { m["terminals"] = rawArr{dims: []uint{9}, u8: make([]uint8, 9)} },
			[]string{"length mismatch: terminals has 9 rows"}},
		{"wide-next", func(m map[string]rawArr) { m["next_observations"] = rawArr{dims: []uint{10, 4}, f32: seq(40)} },
			[]string{"next_observations are 4 wide, observations 3"}},
		{"flat-obs", func(m map[string]rawArr) { m["observations"] = rawArr{dims: []uint{30}, f32: seq(30)} },
			[]string{"observations has shape [30], want (N, width)"}},
		{"flag-2", func(m map[string]rawArr) { m["timeouts"].u8[4] = 2 },
			[]string{"timeouts[4] = 2, want 0 or 1"}},
		{"nan", func(m map[string]rawArr) { m["observations"] = nan["observations"] },
			[]string{"observations[row 3, col 1] is NaN"}},
		{"inf", func(m map[string]rawArr) { m["next_observations"] = inf["next_observations"] },
			[]string{"next_observations[row 5, col 2] is +Inf"}},
	}
	for _, c := range cases {
		m := base()
		c.edit(m)
		p := filepath.Join(dir, c.name+".hdf5")
		writeRawH5(t, p, m)
		_, err := ReadD4RL(p)
		wantErr(t, err, append([]string{p}, c.parts...)...)
	}
}

func TestD4RLWriteFailuresLeaveNothing(t *testing.T) {
	p, old := writeRandomD4RL(t, "keep.hdf5", 5)
	dir := filepath.Dir(p)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		after, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(before) {
			t.Fatalf("%s changed the existing file", what)
		}
		onlyFiles(t, dir, "keep.hdf5")
	}

	bad := randomDataset(6)
	bad.Rew[3] = float32(math.NaN())
	wantErr(t, WriteD4RL(p, bad), p, "rewards[row 3, col 0] is NaN")
	check("a NaN data set")

	bad = randomDataset(6)
	bad.Meta = map[string]string{"policy": "x", "policy/fc0": "y"}
	wantErr(t, WriteD4RL(p, bad), `"policy" would be both a value and a group`)
	check("colliding metadata keys")

	// A failure half-way through the HDF5 writing (after the main arrays,
	// at infos/qpos whose length does not match its width) must remove the
	// half-written temporary file and keep the old one.
	bad = randomDataset(6)
	bad.QPosDim = 5
	err = atomicfile.WritePath(p, 0o644, func(tmp string) error {
		if err := writeD4RL(tmp, bad, nil); err != nil {
			if st, serr := os.Stat(tmp); serr != nil || st.Size() == 0 {
				t.Errorf("expected a half-written temporary file, stat: %v", serr)
			}
			return err
		}
		return nil
	})
	wantErr(t, err, "infos/qpos: 200 values for shape [50 5] (250)")
	check("a failure half-way through")

	wantErr(t, WriteD4RL(filepath.Join(dir, "no/such/dir/x.hdf5"), old), "no such file or directory")
}

// h5pyRanks writes, with h5py, D4RL files whose data sets have the wrong
// rank (argv[1] is the folder): one file per case, named after it, every
// other data set well formed. "obs-3d-huge" declares 2^50 floats that were
// never written (the file stays small), so a reader that reads before
// checking the shape fails to allocate them (a panic, not a quiet OOM).
const h5pyRanks = `
import sys, os, h5py, numpy as np
N = 4
good = {
    "observations": np.zeros((N, 3), np.float32),
    "next_observations": np.zeros((N, 3), np.float32),
    "actions": np.zeros((N, 2), np.float32),
    "rewards": np.zeros(N, np.float32),
    "terminals": np.zeros(N, bool),
    "timeouts": np.zeros(N, bool),
}
cases = {
    "obs-scalar": ("observations", np.float32(1.5)),
    "obs-1d": ("observations", np.zeros(N * 3, np.float32)),
    "obs-3d": ("observations", np.zeros((N, 3, 1), np.float32)),
    "obs-null": ("observations", h5py.Empty("f4")),
    "obs-3d-huge": ("observations", None),
    "next-scalar": ("next_observations", np.float32(0)),
    "actions-scalar": ("actions", np.float32(0)),
    "rewards-scalar": ("rewards", np.float32(0)),
    "rewards-3d": ("rewards", np.zeros((N, 1, 1), np.float32)),
    "terminals-scalar": ("terminals", np.bool_(False)),
    "timeouts-3d": ("timeouts", np.zeros((N, 1, 1), bool)),
    "qpos-scalar": ("infos/qpos", np.float32(0)),
}
for case, (key, value) in cases.items():
    with h5py.File(os.path.join(sys.argv[1], case + ".hdf5"), "w") as f:
        for k, v in good.items():
            if k != key:
                f[k] = v
        if value is None:
            f.create_dataset(key, shape=(1 << 30, 1 << 10, 1 << 10), dtype="f4", chunks=(1, 1, 1 << 10))
        else:
            f[key] = value
`

// TestD4RLDatasetRanks checks that a data set of the wrong rank (a scalar,
// an empty dataspace, 1-D or 3-D where a matrix belongs) is an error naming
// it, never a panic, and is refused before its values are read.
func TestD4RLDatasetRanks(t *testing.T) {
	pyref.Need(t, "h5py", "numpy")
	dir := t.TempDir()
	pyref.Run(t, h5pyRanks, dir)
	for _, c := range []struct{ name, want string }{
		{"obs-scalar", "observations is a scalar, want an array"},
		{"obs-1d", "observations has shape [12], want (N, width)"},
		{"obs-3d", "observations has shape [4 3 1], want (N, width)"},
		{"obs-null", "observations is empty (a null dataspace), want an array"},
		{"obs-3d-huge", "observations has shape [1073741824 1024 1024], want (N, width)"},
		{"next-scalar", "next_observations is a scalar, want an array"},
		{"actions-scalar", "actions is a scalar, want an array"},
		{"rewards-scalar", "rewards is a scalar, want an array"},
		{"rewards-3d", "rewards has shape [4 1 1], want (N,) or (N, 1)"},
		{"terminals-scalar", "terminals is a scalar, want an array"},
		{"timeouts-3d", "timeouts has shape [4 1 1], want (N,) or (N, 1)"},
		{"qpos-scalar", "infos/qpos is a scalar, want an array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".hdf5")
			_, err := ReadD4RL(p)
			wantErr(t, err, p, c.want)
			_, err = Read(p) // what train offline and convert call
			wantErr(t, err, p, c.want)
		})
	}
}
