package datasets

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/pyref"
)

// minariSample is 3 episodes of 4, 3 and 2 steps (terminated, timed out,
// and an unterminated tail), obs 3 wide, actions 2 wide, with distinct
// values and consistent next observations.
func minariSample() *Dataset {
	const od, ad = 3, 2
	lens := []int{4, 3, 2}
	d := &Dataset{ObsDim: od, ActDim: ad, Meta: map[string]string{"env": "hopper", "kind": "medium", "name": "hopper-medium"}}
	v := float32(0)
	for e, n := range lens {
		cur := make([]float32, od)
		for j := range cur {
			v++
			cur[j] = v
		}
		for t := 0; t < n; t++ {
			next := make([]float32, od)
			for j := range next {
				v++
				next[j] = v
			}
			d.Obs = append(d.Obs, cur...)
			d.NextObs = append(d.NextObs, next...)
			d.Act = append(d.Act, float32(e)+0.25, -float32(t)*0.5)
			d.Rew = append(d.Rew, float32(10*e+t))
			d.Terminal = append(d.Terminal, e == 0 && t == n-1)
			d.Timeout = append(d.Timeout, e == 1 && t == n-1)
			cur = next
		}
	}
	d.N = len(d.Rew)
	return d
}

// TestWriteMinariLayoutWithH5py checks the written directory with h5py and
// json against Minari's documented layout: data/main_data.hdf5 with groups
// episode_0.. holding observations (T+1 rows), actions, rewards,
// terminations and truncations (T rows, bool), attributes id and
// total_steps, and data/metadata.json with total_episodes, total_steps,
// data_format and Box spaces; the values are the sample's, built here.
func TestWriteMinariLayoutWithH5py(t *testing.T) {
	pyref.Need(t, "h5py", "numpy")
	d := minariSample()
	dir := filepath.Join(t.TempDir(), "hopper-medium-v0")
	if err := WriteMinari(dir, d, MinariSpec{DatasetID: "admpo/hopper/medium-v0", ActLow: []float64{-1, -1}, ActHigh: []float64{1, 1}}); err != nil {
		t.Fatal(err)
	}
	out := pyref.Run(t, `
import h5py, json, sys, numpy as np
root = sys.argv[1]
meta = json.load(open(root + "/data/metadata.json"))
f = h5py.File(root + "/data/main_data.hdf5", "r")
eps = []
for i in range(meta["total_episodes"]):
    g = f["episode_%d" % i]
    assert set(g.keys()) == {"observations", "actions", "rewards", "terminations", "truncations"}, list(g.keys())
    for k in ("terminations", "truncations"):
        assert g[k].dtype == np.bool_, (k, g[k].dtype)
    eps.append({"id": int(g.attrs["id"]), "total_steps": int(g.attrs["total_steps"]),
                "obs": g["observations"][()].tolist(), "act": g["actions"][()].tolist(),
                "rew": g["rewards"][()].tolist(), "term": g["terminations"][()].tolist(),
                "trunc": g["truncations"][()].tolist()})
assert len(f.keys()) == meta["total_episodes"]
obs_space = json.loads(meta["observation_space"])
act_space = json.loads(meta["action_space"])
print(json.dumps({"meta": {k: meta[k] for k in ("total_episodes", "total_steps", "data_format", "dataset_id")},
                  "obs_space": [obs_space["type"], obs_space["shape"], obs_space["low"][0] == -float("inf")],
                  "act_space": [act_space["type"], act_space["shape"], act_space["low"], act_space["high"]],
                  "admpo": meta["admpo"], "eps": eps}))
`, dir)
	var got struct {
		Meta     map[string]any
		ObsSpace []any `json:"obs_space"`
		ActSpace []any `json:"act_space"`
		Admpo    map[string]string
		Eps      []struct {
			ID          int `json:"id"`
			Steps       int `json:"total_steps"`
			Obs, Act    [][]float64
			Rew         []float64
			Term, Trunc []bool
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Meta["total_episodes"] != 3.0 || got.Meta["total_steps"] != 9.0 || got.Meta["data_format"] != "hdf5" ||
		got.Meta["dataset_id"] != "admpo/hopper/medium-v0" {
		t.Errorf("metadata %v", got.Meta)
	}
	if got.ObsSpace[0] != "Box" || got.ObsSpace[1].([]any)[0] != 3.0 || got.ObsSpace[2] != true {
		t.Errorf("observation space %v", got.ObsSpace)
	}
	if got.ActSpace[0] != "Box" || got.ActSpace[1].([]any)[0] != 2.0 || got.ActSpace[2].([]any)[0] != -1.0 {
		t.Errorf("action space %v", got.ActSpace)
	}
	if got.Admpo["env"] != "hopper" || got.Admpo["kind"] != "medium" {
		t.Errorf("admpo metadata %v", got.Admpo)
	}
	// Expected episodes, rebuilt from the sample's construction rule.
	lens := []int{4, 3, 2}
	v, row := 0.0, 0
	for e, n := range lens {
		ep := got.Eps[e]
		if ep.ID != e || ep.Steps != n || len(ep.Obs) != n+1 || len(ep.Act) != n || len(ep.Rew) != n {
			t.Fatalf("episode %d: id %d, total_steps %d, %d obs, %d actions, %d rewards; want %d steps",
				e, ep.ID, ep.Steps, len(ep.Obs), len(ep.Act), len(ep.Rew), n)
		}
		for k := 0; k <= n; k++ {
			for j := 0; j < 3; j++ {
				v++
				if ep.Obs[k][j] != v {
					t.Fatalf("episode %d obs[%d][%d] = %v, want %v", e, k, j, ep.Obs[k][j], v)
				}
			}
		}
		for k := 0; k < n; k++ {
			if ep.Act[k][0] != float64(e)+0.25 || ep.Act[k][1] != -float64(k)*0.5 || ep.Rew[k] != float64(10*e+k) {
				t.Fatalf("episode %d step %d: action %v reward %v", e, k, ep.Act[k], ep.Rew[k])
			}
			last := k == n-1
			if ep.Term[k] != (e == 0 && last) || ep.Trunc[k] != ((e == 1 || e == 2) && last) {
				t.Fatalf("episode %d step %d: terminated %v truncated %v", e, k, ep.Term[k], ep.Trunc[k])
			}
			row++
		}
	}
	onlyFiles(t, filepath.Dir(dir), "hopper-medium-v0")
	if err := WriteMinari(dir, d, MinariSpec{}); err == nil {
		t.Error("WriteMinari over an existing data set succeeded")
	}
}

// TestReadMinariWrittenByH5py reads a data set that h5py writes the way
// Minari's HDF5 storage does (float64 observations, numpy bools, seed and
// id attributes, a namespaced dataset id, an infos group) and compares
// every transition with the values the script wrote.
func TestReadMinariWrittenByH5py(t *testing.T) {
	pyref.Need(t, "h5py", "numpy")
	dir := filepath.Join(t.TempDir(), "mujoco", "hopper", "medium-v0")
	out := pyref.Run(t, `
import h5py, json, os, sys, numpy as np
root = sys.argv[1]
os.makedirs(root + "/data")
rng = np.random.default_rng(3)
lens = [5, 2, 3]
eps = []
with h5py.File(root + "/data/main_data.hdf5", "w", track_order=True) as f:
    for i, n in enumerate(lens):
        g = f.create_group("episode_%d" % i)
        g.attrs["id"] = i
        g.attrs["seed"] = 100 + i
        g.attrs["total_steps"] = n
        obs = rng.normal(size=(n + 1, 4))
        act = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
        rew = rng.normal(size=n)
        term = np.zeros(n, dtype=bool); trunc = np.zeros(n, dtype=bool)
        if i == 0: term[-1] = True
        if i == 1: trunc[-1] = True
        # episode 2 ends with neither flag (a cut collection)
        g.create_dataset("observations", data=obs, chunks=True, maxshape=(None, 4))
        g.create_dataset("actions", data=act)
        g.create_dataset("rewards", data=rew)
        g.create_dataset("terminations", data=term)
        g.create_dataset("truncations", data=trunc)
        g.create_group("infos").create_dataset("qpos", data=np.zeros((n + 1, 6)))
        eps.append({"obs": obs.tolist(), "act": act.astype(float).tolist(), "rew": rew.tolist(),
                    "term": term.tolist(), "trunc": trunc.tolist()})
box = lambda n, lo, hi: json.dumps({"type": "Box", "dtype": "float64", "shape": [n], "low": [lo] * n, "high": [hi] * n})
json.dump({"total_episodes": 3, "total_steps": sum(lens), "data_format": "hdf5", "dataset_id": "mujoco/hopper/medium-v0",
           "minari_version": "0.5.1", "observation_space": box(4, -float("inf"), float("inf")),
           "action_space": box(2, -1.0, 1.0), "ref_max_score": 3234.3}, open(root + "/data/metadata.json", "w"))
print(json.dumps(eps))
`, dir)
	var eps []struct {
		Obs, Act    [][]float64
		Rew         []float64
		Term, Trunc []bool
	}
	if err := json.Unmarshal([]byte(out), &eps); err != nil {
		t.Fatal(err)
	}
	d, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 10 || d.ObsDim != 4 || d.ActDim != 2 {
		t.Fatalf("N %d obs %d act %d, want 10, 4, 2", d.N, d.ObsDim, d.ActDim)
	}
	if d.Meta["env"] != "hopper" || d.Meta["kind"] != "medium" || d.Meta["minari/ref_max_score"] != "3234.3" {
		t.Errorf("meta %v", d.Meta)
	}
	row := 0
	for e, ep := range eps {
		n := len(ep.Rew)
		for k := 0; k < n; k++ {
			for j := 0; j < 4; j++ {
				if d.Obs[row*4+j] != float32(ep.Obs[k][j]) || d.NextObs[row*4+j] != float32(ep.Obs[k+1][j]) {
					t.Fatalf("row %d (episode %d step %d): obs/next obs differ", row, e, k)
				}
			}
			for j := 0; j < 2; j++ {
				if d.Act[row*2+j] != float32(ep.Act[k][j]) {
					t.Fatalf("row %d: action differs", row)
				}
			}
			wantTrunc := ep.Trunc[k] || (e == 2 && k == n-1) // the cut episode's end is kept as a timeout
			if d.Rew[row] != float32(ep.Rew[k]) || d.Terminal[row] != ep.Term[k] || d.Timeout[row] != wantTrunc {
				t.Fatalf("row %d: reward %v terminal %v timeout %v", row, d.Rew[row], d.Terminal[row], d.Timeout[row])
			}
			row++
		}
	}
	if got := len(d.Episodes()); got != 3 {
		t.Errorf("%d episodes, want 3", got)
	}
}

// TestMinariRoundTripAndErrors: WriteMinari then ReadMinari gives back the
// transitions; broken directories are errors naming the problem.
func TestMinariRoundTripAndErrors(t *testing.T) {
	d := minariSample()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "hopper-medium-v0")
	if err := WriteMinari(dir, d, MinariSpec{}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadMinari(dir)
	if err != nil {
		t.Fatal(err)
	}
	bitexact.Same(t, "obs", r.Obs, d.Obs)
	bitexact.Same(t, "next obs", r.NextObs, d.NextObs)
	bitexact.Same(t, "act", r.Act, d.Act)
	bitexact.Same(t, "rew", r.Rew, d.Rew)
	for i := range d.Terminal {
		wantTimeout := d.Timeout[i] || i == d.N-1 // the tail ends truncated
		if r.Terminal[i] != d.Terminal[i] || r.Timeout[i] != wantTimeout {
			t.Fatalf("row %d flags: %v %v", i, r.Terminal[i], r.Timeout[i])
		}
	}
	if r.Meta["env"] != "hopper" || r.Meta["name"] != "hopper-medium" {
		t.Errorf("meta %v", r.Meta)
	}

	_, err = ReadMinari(filepath.Join(tmp, "nothing"))
	wantErr(t, err, "metadata.json")
	bad := filepath.Join(tmp, "bad")
	os.MkdirAll(filepath.Join(bad, "data"), 0o755)
	os.WriteFile(filepath.Join(bad, "data", MinariMetaFile), []byte(`{"total_episodes": 1, "data_format": "arrow"}`), 0o644)
	_, err = ReadMinari(bad)
	wantErr(t, err, "arrow")
	os.WriteFile(filepath.Join(bad, "data", MinariMetaFile), []byte(`{"total_episodes": 4, "data_format": "hdf5"}`), 0o644)
	b, _ := os.ReadFile(filepath.Join(dir, "data", MinariDataFile))
	os.WriteFile(filepath.Join(bad, "data", MinariDataFile), b, 0o644)
	_, err = ReadMinari(bad)
	wantErr(t, err, "episode_3")
	truncateHalf(t, filepath.Join(bad, "data", MinariDataFile))
	_, err = ReadMinari(bad)
	wantErr(t, err, MinariDataFile)
}
