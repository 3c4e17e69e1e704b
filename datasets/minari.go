package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/hdf5"
)

// Minari (Farama's offline RL data format) keeps a data set in a directory
// named after its id, holding data/metadata.json (total_episodes,
// total_steps, data_format "hdf5", the observation and action spaces as
// serialised JSON, ...) and data/main_data.hdf5 with one group episode_<i>
// per episode: observations (T+1 rows: the reset observation and every next
// one), actions, rewards, terminations and truncations (T rows), and the
// attributes id and total_steps.

// Minari file names inside a data set directory.
const (
	MinariMetaFile = "metadata.json"
	MinariDataFile = "main_data.hdf5"
)

// minariDataDir returns the directory holding metadata.json: dir/data (a
// Minari data set directory) or dir itself (its data directory); ok is
// false when neither holds one.
func minariDataDir(dir string) (string, bool) {
	for _, d := range []string{filepath.Join(dir, "data"), dir} {
		if st, err := os.Stat(filepath.Join(d, MinariMetaFile)); err == nil && !st.IsDir() {
			return d, true
		}
	}
	return "", false
}

// IsMinari tells whether path is a Minari data set directory (or its data
// directory).
func IsMinari(path string) bool {
	_, ok := minariDataDir(path)
	return ok
}

// Read reads a data set: a Minari directory (see ReadMinari) or a D4RL
// HDF5 file (see ReadD4RL).
func Read(path string) (*Dataset, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return ReadMinari(path)
	}
	return ReadD4RL(path)
}

// minariMeta is the part of metadata.json that admpo reads; the rest is
// kept as Meta strings.
type minariMeta struct {
	TotalEpisodes int    `json:"total_episodes"`
	TotalSteps    int    `json:"total_steps"`
	DataFormat    string `json:"data_format"`
	DatasetID     string `json:"dataset_id"`
}

// ReadMinari reads a Minari data set directory with HDF5 storage into
// transitions: episode i's step t gives the row (observations[t],
// actions[t], rewards[t], observations[t+1], terminations[t],
// truncations[t]). An episode whose last step has neither flag set (a cut
// collection) gets a timeout there, so that its end stays marked. Meta
// holds metadata.json's scalar entries (and those of its "admpo" object),
// with env and kind from the dataset id (e.g. mujoco/hopper/medium-v0) when
// they are not recorded. Observation and action spaces other than flat
// boxes are refused.
func ReadMinari(dir string) (*Dataset, error) {
	return readNamed("Minari data set", dir, readMinari)
}

func readMinari(dir string) (*Dataset, error) {
	dd, ok := minariDataDir(dir)
	if !ok {
		return nil, fmt.Errorf("no %s in it or in its data directory", MinariMetaFile)
	}
	metaPath := filepath.Join(dd, MinariMetaFile)
	if _, err := statFile(metaPath); err != nil {
		return nil, fmt.Errorf("%s %w", metaPath, err)
	}
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		return nil, err
	}
	var m minariMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", MinariMetaFile, err)
	}
	if m.DataFormat != "" && m.DataFormat != "hdf5" {
		return nil, fmt.Errorf("data_format %q: admpo reads Minari's hdf5 storage only", m.DataFormat)
	}
	if m.TotalEpisodes <= 0 {
		return nil, fmt.Errorf("%s: total_episodes %d, want at least one episode", MinariMetaFile, m.TotalEpisodes)
	}
	meta, err := minariMetaStrings(raw)
	if err != nil {
		return nil, err
	}
	f, closeFile, err := openH5(filepath.Join(dd, MinariDataFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MinariDataFile, err)
	}
	defer closeFile()

	d := &Dataset{N: -1}
	if m.TotalSteps > 0 {
		d.grow(m.TotalSteps)
	}
	for i := 0; i < m.TotalEpisodes; i++ {
		if err := d.addMinariEpisode(f, i); err != nil {
			return nil, err
		}
	}
	if m.TotalSteps > 0 && d.N != m.TotalSteps {
		return nil, fmt.Errorf("%s: total_steps %d, the episodes hold %d", MinariMetaFile, m.TotalSteps, d.N)
	}
	d.Meta = meta
	id := m.DatasetID
	if id == "" {
		id = filepath.Base(filepath.Clean(dir))
	}
	if env, kind := minariIdentity(id); d.Meta["env"] == "" && d.Meta["kind"] == "" && env != "" && kind != "" {
		d.Meta["env"], d.Meta["kind"] = env, kind
	}
	if d.Meta["name"] == "" {
		d.Meta["name"] = strings.ReplaceAll(strings.TrimSuffix(id, filepath.Ext(id)), "/", "-")
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return d, nil
}

// grow reserves room for n more transitions (sizes unknown until the first
// episode: only the row slices).
func (d *Dataset) grow(n int) {
	d.Rew = make([]float32, 0, n)
	d.Terminal = make([]bool, 0, n)
	d.Timeout = make([]bool, 0, n)
}

// addMinariEpisode appends episode_<i>'s transitions.
func (d *Dataset) addMinariEpisode(f *hdf5.File, i int) error {
	g := fmt.Sprintf("episode_%d", i)
	ok, err := h5linkExists(f, g)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: no group %s (total_episodes says it exists)", MinariDataFile, g)
	}
	grp, err := f.OpenGroup(g)
	if err != nil {
		return h5wrap(fmt.Errorf("%s is not a readable group: %w", g, err))
	}
	defer grp.Close()
	obs, err := readMatrix(grp, "observations")
	if err != nil {
		return fmt.Errorf("%w (a flat Box observation space is needed)", err)
	}
	act, err := readMatrix(grp, "actions")
	if err != nil {
		return fmt.Errorf("%w (a flat Box action space is needed)", err)
	}
	rew, err := readVector(grp, "rewards")
	if err != nil {
		return err
	}
	t := rew.rows
	if t == 0 {
		return fmt.Errorf("%s has no steps", g)
	}
	if obs.rows != t+1 {
		return fmt.Errorf("%s: %d observations for %d steps, want steps + 1", g, obs.rows, t)
	}
	if act.rows != t {
		return fmt.Errorf("%s: %d actions for %d steps", g, act.rows, t)
	}
	term, err := readFlags(grp, "terminations", t)
	if err != nil {
		return err
	}
	trunc, err := readFlags(grp, "truncations", t)
	if err != nil {
		return err
	}
	if d.N < 0 {
		d.N, d.ObsDim, d.ActDim = 0, obs.cols, act.cols
		if n := cap(d.Rew); n > 0 { // total_steps known: no regrowing
			d.Obs, d.NextObs = make([]float32, 0, n*obs.cols), make([]float32, 0, n*obs.cols)
			d.Act = make([]float32, 0, n*act.cols)
		}
	}
	if obs.cols != d.ObsDim || act.cols != d.ActDim {
		return fmt.Errorf("%s: observations %d and actions %d wide, episode_0's %d and %d", g, obs.cols, act.cols, d.ObsDim, d.ActDim)
	}
	od := d.ObsDim
	d.Obs = append(d.Obs, obs.data[:t*od]...)
	d.NextObs = append(d.NextObs, obs.data[od:]...)
	d.Act = append(d.Act, act.data...)
	d.Rew = append(d.Rew, rew.data...)
	if !term[t-1] && !trunc[t-1] {
		trunc[t-1] = true // a cut episode: keep its end
	}
	d.Terminal = append(d.Terminal, term...)
	d.Timeout = append(d.Timeout, trunc...)
	d.N += t
	return nil
}

// minariMetaStrings returns metadata.json's scalar entries as strings, the
// entries of its "admpo" object (what WriteMinari stores) taking their
// plain keys.
func minariMetaStrings(raw []byte) (map[string]string, error) {
	var all map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&all); err != nil {
		return nil, fmt.Errorf("%s: %w", MinariMetaFile, err)
	}
	meta := map[string]string{}
	put := func(k string, v any) {
		switch x := v.(type) {
		case string:
			meta[k] = x
		case json.Number:
			meta[k] = x.String()
		case bool:
			meta[k] = strconv.FormatBool(x)
		}
	}
	for k, v := range all {
		if k == "observation_space" || k == "action_space" || k == "env_spec" || k == "eval_env_spec" || k == "admpo" {
			continue
		}
		put("minari/"+k, v)
	}
	if a, ok := all["admpo"].(map[string]any); ok {
		for k, v := range a {
			put(k, v)
		}
	}
	return meta, nil
}

// minariIdentity reads a task and data set kind from a Minari dataset id
// such as mujoco/hopper/medium-v0 or hopper-medium-v2.
func minariIdentity(id string) (env, kind string) {
	id = strings.ToLower(id)
	if i := strings.LastIndex(id, "-v"); i >= 0 {
		if _, err := strconv.Atoi(id[i+2:]); err == nil {
			id = id[:i]
		}
	}
	parts := strings.Split(id, "/")
	last := parts[len(parts)-1]
	for _, k := range []string{"medium-replay", "medium-expert", "random", "medium", "expert", "simple"} {
		switch {
		case last == k && len(parts) >= 2:
			return parts[len(parts)-2], k
		case strings.HasSuffix(last, "-"+k):
			return strings.TrimSuffix(last, "-"+k), k
		}
	}
	return "", ""
}

// MinariSpec is what a Minari data set records beside the transitions.
type MinariSpec struct {
	// DatasetID is metadata.json's dataset_id (e.g. admpo/hopper/medium-v0).
	DatasetID string
	// ActLow and ActHigh are the action space's bounds; nil takes the
	// data's action range.
	ActLow, ActHigh []float64
}

// WriteMinari writes d as a Minari data set directory dir (which must not
// exist, or be empty): dir/data/main_data.hdf5 with one group per episode
// of d.Episodes() (an unterminated tail becomes a truncated episode), each
// episode's observations being its rows' observations and its last row's
// next observation, and dir/data/metadata.json with Minari's keys and d.Meta
// under "admpo". Everything is written in a temporary directory beside dir
// and renamed into place.
func WriteMinari(dir string, d *Dataset, spec MinariSpec) error {
	if err := writeMinari(dir, d, spec); err != nil {
		return fmt.Errorf("datasets: writing Minari data set %s: %w", dir, err)
	}
	return nil
}

func writeMinari(dir string, d *Dataset, spec MinariSpec) error {
	if d == nil {
		return errors.New("nil dataset")
	}
	if err := d.check(); err != nil {
		return err
	}
	if d.N == 0 {
		return errors.New("no transitions")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return errors.New("the directory exists and is not empty")
	}
	low, high := spec.ActLow, spec.ActHigh
	if low == nil || high == nil {
		low, high = dataActionRange(d)
	}
	if len(low) != d.ActDim || len(high) != d.ActDim {
		return fmt.Errorf("action bounds of %d and %d values for %d actions", len(low), len(high), d.ActDim)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return err
	}
	eps := d.Episodes()
	if err := writeMinariEpisodes(filepath.Join(data, MinariDataFile), d, eps); err != nil {
		return err
	}
	meta, err := minariMetadataJSON(d, spec.DatasetID, len(eps), low, high)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data, MinariMetaFile), meta, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	os.Remove(dir) // an empty directory (a non-empty one was refused above)
	return os.Rename(tmp, dir)
}

// dataActionRange is the data's per-dimension action range.
func dataActionRange(d *Dataset) (low, high []float64) {
	low, high = make([]float64, d.ActDim), make([]float64, d.ActDim)
	for j := range low {
		low[j], high[j] = math.Inf(1), math.Inf(-1)
	}
	for i := 0; i < d.N; i++ {
		for j, v := range d.Act[i*d.ActDim : (i+1)*d.ActDim] {
			low[j], high[j] = math.Min(low[j], float64(v)), math.Max(high[j], float64(v))
		}
	}
	return low, high
}

// writeMinariEpisodes writes main_data.hdf5.
func writeMinariEpisodes(path string, d *Dataset, eps []Episode) error {
	return createH5(path, func(f *hdf5.File) error { return writeEpisodeGroups(f, d, eps) })
}

// writeEpisodeGroups writes one group episode_<i> per episode of d into f.
func writeEpisodeGroups(f *hdf5.File, d *Dataset, eps []Episode) error {
	bt, err := h5boolType()
	if err != nil {
		return err
	}
	defer bt.Close()
	od, ad := d.ObsDim, d.ActDim
	obs := make([]float32, 0, (d.N+len(eps))*od)
	for i, e := range eps {
		g := fmt.Sprintf("episode_%d", i)
		grp, err := f.CreateGroup(g)
		if err != nil {
			return h5wrap(fmt.Errorf("creating group %s: %w", g, err))
		}
		t := e.Len()
		err = writeInt64Attrs(grp, map[string]int64{"id": int64(i), "total_steps": int64(t)})
		grp.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", g, err)
		}
		obs = append(append(obs[:0], d.Obs[e.Start*od:e.End*od]...), d.NextObs[(e.End-1)*od:e.End*od]...)
		trunc := append([]bool(nil), d.Timeout[e.Start:e.End]...)
		if !e.Terminal && !e.Timeout {
			trunc[t-1] = true // the data set's unterminated tail
		}
		for _, a := range []floatArr{
			{g + "/observations", obs, []uint{uint(t + 1), uint(od)}},
			{g + "/actions", d.Act[e.Start*ad : e.End*ad], []uint{uint(t), uint(ad)}},
			{g + "/rewards", d.Rew[e.Start:e.End], []uint{uint(t)}},
		} {
			if err := writeArray(f, a.name, hdf5.T_NATIVE_FLOAT, a.dims, a.data); err != nil {
				return err
			}
		}
		if err := writeArray(f, g+"/terminations", bt, []uint{uint(t)}, boolBytes(d.Terminal[e.Start:e.End])); err != nil {
			return err
		}
		if err := writeArray(f, g+"/truncations", bt, []uint{uint(t)}, boolBytes(trunc)); err != nil {
			return err
		}
	}
	return nil
}

// writeInt64Attrs adds scalar int64 attributes to a group.
func writeInt64Attrs(g *hdf5.Group, attrs map[string]int64) error {
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	space, err := hdf5.CreateDataspace(hdf5.S_SCALAR)
	if err != nil {
		return h5wrap(err)
	}
	defer space.Close()
	for _, k := range names {
		a, err := g.CreateAttribute(k, hdf5.T_NATIVE_INT64, space)
		if err != nil {
			return h5wrap(fmt.Errorf("attribute %s: %w", k, err))
		}
		v := attrs[k]
		err = a.Write(&v, hdf5.T_NATIVE_INT64)
		a.Close()
		if err != nil {
			return h5wrap(fmt.Errorf("attribute %s: %w", k, err))
		}
	}
	return nil
}

// minariMetadataJSON is metadata.json: Minari's keys, the spaces as
// Minari serialises a Box (a JSON string; unbounded observations as
// Python's -Infinity and Infinity), and d.Meta under "admpo".
func minariMetadataJSON(d *Dataset, id string, episodes int, low, high []float64) ([]byte, error) {
	inf := make([]float64, d.ObsDim)
	for i := range inf {
		inf[i] = math.Inf(1)
	}
	neg := make([]float64, d.ObsDim)
	for i := range neg {
		neg[i] = math.Inf(-1)
	}
	if id == "" {
		id = d.Meta["name"]
	}
	admpo := map[string]string{}
	for k, v := range d.Meta {
		if !strings.HasPrefix(k, "minari/") {
			admpo[k] = v
		}
	}
	m := map[string]any{
		"dataset_id":        id,
		"total_episodes":    episodes,
		"total_steps":       d.N,
		"data_format":       "hdf5",
		"observation_space": boxJSON(d.ObsDim, neg, inf),
		"action_space":      boxJSON(d.ActDim, low, high),
		"algorithm_name":    d.Meta["policy"],
		"author":            "admpo",
		"admpo":             admpo,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// boxJSON is Minari's serialisation of a float32 Box of n values with the
// given bounds, infinities written as Python's json writes them.
func boxJSON(n int, low, high []float64) string {
	num := func(v []float64) string {
		s := make([]string, len(v))
		for i, x := range v {
			switch {
			case math.IsInf(x, 1):
				s[i] = "Infinity"
			case math.IsInf(x, -1):
				s[i] = "-Infinity"
			default:
				s[i] = strconv.FormatFloat(x, 'g', -1, 64)
			}
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	return fmt.Sprintf(`{"type": "Box", "dtype": "float32", "shape": [%d], "low": %s, "high": %s}`, n, num(low), num(high))
}
