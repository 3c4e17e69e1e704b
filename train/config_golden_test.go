package train

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
)

// updateConfigGolden rewrites the config goldens from the code under test;
// run it only on code whose config.json output is known to be right.
var updateConfigGolden = flag.Bool("update-config-golden", false, "rewrite train/testdata/config-golden/*.txt")

const configGoldenDir = "testdata/config-golden"

// TestPresetConfigJSONGolden guards config.json's bytes: every preset of
// Preset and OfflinePreset (all tasks, algorithms and data set kinds)
// marshals to the bytes recorded in testdata/config-golden/presets.txt,
// and a preset that fails fails with the recorded error.
func TestPresetConfigJSONGolden(t *testing.T) {
	var out bytes.Buffer
	presets := []string{"paper", "cpu", "quick"}
	for _, preset := range presets {
		for _, env := range envs.Names() {
			task, err := envs.Lookup(env)
			if err != nil {
				t.Fatal(err)
			}
			for _, algo := range Algos {
				c, err := Preset(preset, env, algo, task.ActDim)
				goldenEntry(&out, fmt.Sprintf("online %s %s %s", preset, env, algo), c, err)
			}
		}
		// "" is data without a task (bring your own data).
		for _, env := range append([]string{""}, envs.Names()...) {
			actDim := 4
			if env != "" {
				task, err := envs.Lookup(env)
				if err != nil {
					t.Fatal(err)
				}
				actDim = task.ActDim
			}
			for _, kind := range DatasetKinds {
				for _, algo := range OfflineAlgos {
					c, err := OfflinePreset(preset, env, kind, algo, actDim)
					goldenEntry(&out, fmt.Sprintf("offline %s %q %s %s", preset, env, kind, algo), c, err)
				}
			}
		}
	}
	compareGolden(t, "presets.txt", out.Bytes())
}

// TestOldConfigsLoadGolden guards the reading of config.json files written
// before: the before-split test runs' configs and testdata/config-golden/old
// (copies of docs/results' configs as of 2026-11-25, named by their path,
// and version 1 and 2 configs without the later keys) load to the values
// recorded in testdata/config-golden/loaded.txt, each field by name and as
// config.json writes the loaded config again.
func TestOldConfigsLoadGolden(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/before-split/*/config.json", configGoldenDir + "/old/*.json"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) < 12 {
		t.Fatalf("found %d old configs, want at least 12: %v", len(files), files)
	}
	var out bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(b, &keys); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var c interface{ JSON() []byte }
		if _, offline := keys["steps_per_epoch"]; offline {
			var oc OfflineConfig
			err = json.Unmarshal(b, &oc)
			c = oc
		} else {
			var on OnlineConfig
			err = json.Unmarshal(b, &on)
			c = on
		}
		name := filepath.ToSlash(f)
		goldenEntry(&out, fmt.Sprintf("%s (%T)", name, c), c, err)
		fmt.Fprintf(&out, "-- fields\n%s", fieldDump(reflect.ValueOf(c)))
	}
	compareGolden(t, "loaded.txt", out.Bytes())
}

// TestConfigGoldenCatchesChanges shows that the goldens see a changed key:
// a preset with one model value changed no longer matches its entry.
func TestConfigGoldenCatchesChanges(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join(configGoldenDir, "presets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Preset("quick", "hopper", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	var entry bytes.Buffer
	goldenEntry(&entry, "online quick hopper admpo", c, nil)
	if !bytes.Contains(golden, entry.Bytes()) {
		t.Fatal("the unchanged preset's entry is not in the golden")
	}
	for _, mutate := range []func(*OnlineConfig){
		func(c *OnlineConfig) { c.ADMHidden++ },
		func(c *OnlineConfig) { c.ModelEpochSteps = 7 },
		func(c *OnlineConfig) { c.Threads = 2 },
	} {
		m := c
		mutate(&m)
		entry.Reset()
		goldenEntry(&entry, "online quick hopper admpo", m, nil)
		if bytes.Contains(golden, entry.Bytes()) {
			t.Errorf("a changed config still matches the golden:\n%s", entry.Bytes())
		}
	}
}

// goldenEntry writes one golden entry: a header line, then config.json's
// bytes or the error.
func goldenEntry(out *bytes.Buffer, name string, c interface{ JSON() []byte }, err error) {
	fmt.Fprintf(out, "== %s\n", name)
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return
	}
	out.Write(c.JSON())
}

// fieldDump lists v's fields sorted by name, one "Name=JSON value" line
// each, with the fields of embedded structs listed as their own (as Go
// promotes them), so the dump does not depend on how the config struct is
// put together.
func fieldDump(v reflect.Value) string {
	lines := fieldLines(v)
	sort.Strings(lines)
	return strings.Join(lines, "")
}

// fieldLines are fieldDump's lines in field order.
func fieldLines(v reflect.Value) []string {
	var lines []string
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			lines = append(lines, fieldLines(v.Field(i))...)
			continue
		}
		js, err := json.Marshal(v.Field(i).Interface())
		if err != nil {
			js = []byte("error: " + err.Error())
		}
		lines = append(lines, fmt.Sprintf("%s=%s\n", f.Name, js))
	}
	return lines
}

// compareGolden compares got with the golden file name (or rewrites it
// with -update-config-golden) and reports the first differing line.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(configGoldenDir, name)
	if *updateConfigGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := "<end>", "<end>"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s: line %d differs:\n got  %q\n want %q", path, i+1, gl, wl)
		}
	}
}
