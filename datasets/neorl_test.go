package datasets

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/admpo/admpo/internal/pyref"
)

// neorlFixture writes NeoRL-style archives with numpy: 12 rows of a 12-wide
// (x position + 11) hopper layout in three trajectories starting at rows 0,
// 4 and 9; the second ends with done. Values are integers of the row and
// column so Go can recompute them. argv[1]: np.savez, argv[2]:
// np.savez_compressed, argv[3]: a directory for broken variants.
const neorlFixture = `
import sys, os, numpy as np
N, D, A = 12, 12, 3
i = np.arange(N)[:, None]
obs = (i * 100 + np.arange(D)[None, :]).astype(np.float32)
arrs = dict(
    obs=obs,
    next_obs=obs + np.float32(0.5),
    action=(i * 10 - np.arange(A)[None, :]).astype(np.float32),
    reward=((np.arange(N) - 6) / 4).astype(np.float32)[:, None],
    done=np.isin(np.arange(N), [8])[:, None],
    index=np.array([0, 4, 9], dtype=np.int64),
)
np.savez(sys.argv[1], **arrs)
np.savez_compressed(sys.argv[2], **arrs)
d = sys.argv[3]
def variant(name, **change):
    a = dict(arrs)
    for k, v in change.items():
        if v is None:
            del a[k]
        else:
            a[k] = v
    np.savez(os.path.join(d, name + ".npz"), **a)
variant("no-index", index=None)
variant("no-action", action=None)
variant("short-reward", reward=arrs["reward"][:11])
bad = obs.copy(); bad[5, 2] = np.nan
variant("nan-obs", obs=bad)
variant("bad-index", index=np.array([1, 4, 9]))
variant("unsorted-index", index=np.array([0, 9, 4]))
variant("done-2", done=np.array([0] * 11 + [2], dtype=np.int64))
variant("done-int", done=np.array([0] * 8 + [1] + [0] * 3, dtype=np.int32))
variant("obs-f64", obs=obs.astype(np.float64), next_obs=(obs + 0.5).astype(np.float64))
variant("obs-fortran", obs=np.asfortranarray(obs))
variant("obs-int", obs=obs.astype(np.int64))
`

// neorlWant recomputes the fixture in Go.
func neorlWant() *Dataset {
	n, od, ad := 12, 12, 3
	d := &Dataset{N: n, ObsDim: od, ActDim: ad, Meta: map[string]string{},
		Terminal: make([]bool, n), Timeout: make([]bool, n)}
	for i := 0; i < n; i++ {
		for j := 0; j < od; j++ {
			d.Obs = append(d.Obs, float32(i*100+j))
			d.NextObs = append(d.NextObs, float32(i*100+j)+0.5)
		}
		for j := 0; j < ad; j++ {
			d.Act = append(d.Act, float32(i*10-j))
		}
		d.Rew = append(d.Rew, float32(float64(i-6)/4))
	}
	d.Terminal[8] = true                     // done ends the second trajectory
	d.Timeout[3], d.Timeout[11] = true, true // the others end without done
	return d
}

func TestNeoRLReadsNumpyFixture(t *testing.T) {
	pyref.Need(t, "numpy")
	dir := t.TempDir()
	plain, zipped := filepath.Join(dir, "Hopper-v3-low-1000-train.npz"), filepath.Join(dir, "z.npz")
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	pyref.Run(t, neorlFixture, plain, zipped, bad)

	want := neorlWant()
	for _, p := range []string{plain, zipped, filepath.Join(bad, "done-int.npz"),
		filepath.Join(bad, "obs-f64.npz"), filepath.Join(bad, "obs-fortran.npz")} {
		got, err := ReadNeoRL(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s read as\n%+v\nwant\n%+v", filepath.Base(p), got, want)
		}
	}
	wantEps := []Episode{{0, 4, false, true}, {4, 9, true, false}, {9, 12, false, true}}
	got, _ := ReadNeoRL(plain)
	if eps := got.Episodes(); !reflect.DeepEqual(eps, wantEps) {
		t.Fatalf("episodes %+v, want %+v", eps, wantEps)
	}

	// The raw layout is one wider than hopper's 11: Validate says so.
	wantErr(t, got.Validate(11, 3), "12 wide, the task wants 11", "DropXPos")

	// Mapping to the task layout drops column 0 (the x position).
	task, err := DropXPos(got, 11)
	if err != nil {
		t.Fatal(err)
	}
	if task.ObsDim != 11 || len(task.Obs) != 12*11 || len(task.NextObs) != 12*11 {
		t.Fatalf("mapped widths: ObsDim %d, %d obs, %d next", task.ObsDim, len(task.Obs), len(task.NextObs))
	}
	for i := 0; i < 12; i++ {
		for j := 0; j < 11; j++ {
			if o, w := task.Obs[i*11+j], float32(i*100+j+1); o != w {
				t.Fatalf("mapped obs[%d,%d] = %v, want %v", i, j, o, w)
			}
			if o, w := task.NextObs[i*11+j], float32(i*100+j+1)+0.5; o != w {
				t.Fatalf("mapped next_obs[%d,%d] = %v, want %v", i, j, o, w)
			}
		}
	}
	if err := task.Validate(11, 3); err != nil {
		t.Fatal(err)
	}
	if got.ObsDim != 12 || got.Obs[0] != 0 {
		t.Fatal("DropXPos changed its input")
	}
	byTask, err := ReadNeoRLTask(plain, 11, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byTask, task) {
		t.Fatal("ReadNeoRLTask differs from ReadNeoRL + DropXPos")
	}

	// Refusals.
	_, err = DropXPos(got, 12)
	wantErr(t, err, "observations are 12 wide, want the task's 12 + 1 = 13", "already dropped")
	_, err = DropXPos(got, 17)
	wantErr(t, err, "observations are 12 wide, want the task's 17 + 1 = 18")
	_, err = ReadNeoRLTask(plain, 17, 6)
	wantErr(t, err, plain, "want the task's 17 + 1 = 18")
	_, err = ReadNeoRLTask(plain, 11, 6)
	wantErr(t, err, plain, "actions are 3 wide, the task wants 6")

	// Broken files.
	cases := []struct {
		file  string
		parts []string
	}{
		{"no-index", []string{`missing array "index"`}},
		{"no-action", []string{`missing array "action"`}},
		{"short-reward", []string{"length mismatch: reward has 11 rows, obs has 12"}},
		{"nan-obs", []string{"observations[row 5, col 2] is NaN"}},
		{"bad-index", []string{"index[0] = 1, want 0"}},
		{"unsorted-index", []string{"index[2] = 4 does not increase"}},
		{"done-2", []string{"done[11] = 2, want 0 or 1"}},
		{"obs-int", []string{`obs has dtype kind 'i', want float`}},
	}
	for _, c := range cases {
		p := filepath.Join(bad, c.file+".npz")
		_, err := ReadNeoRL(p)
		wantErr(t, err, append([]string{p}, c.parts...)...)
	}

	// Truncated, not an archive, missing.
	truncateHalf(t, zipped)
	_, err = ReadNeoRL(zipped)
	wantErr(t, err, zipped, "not a readable .npz archive")
	junk := filepath.Join(dir, "junk.npz")
	if err := os.WriteFile(junk, []byte("this is not a zip archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNeoRL(junk)
	wantErr(t, err, junk, "not a readable .npz archive")
	_, err = ReadNeoRL(filepath.Join(dir, "absent.npz"))
	wantErr(t, err, "absent.npz", "no such file")
}

// TestNeoRLCorruptMember flips bytes inside the compressed data of one
// member, which the zip checksum or the deflate stream must catch.
func TestNeoRLCorruptMember(t *testing.T) {
	pyref.Need(t, "numpy")
	dir := t.TempDir()
	plain, zipped := filepath.Join(dir, "p.npz"), filepath.Join(dir, "z.npz")
	pyref.Run(t, neorlFixture, plain, zipped, dir)
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	// Uncompressed members: obs data starts after the zip local header
	// (30 bytes + name) and the 128-byte npy header; damage some of it.
	for i := 200; i < 260; i++ {
		raw[i] ^= 0xFF
	}
	if err := os.WriteFile(plain, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNeoRL(plain)
	wantErr(t, err, plain, "obs: reading data (corrupt archive?)", "checksum")
}
