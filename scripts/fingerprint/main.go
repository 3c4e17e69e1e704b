package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/admpo/admpo/internal/ckpt"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fingerprint RUN_DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		lines, err := Dir(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fingerprint:", err)
			os.Exit(1)
		}
		for _, l := range lines {
			fmt.Printf("%s  %s\n", l.Hash, filepath.Join(filepath.Base(dir), l.Name))
		}
	}
}

// Line is one fingerprinted item of a run directory.
type Line struct{ Name, Hash string }

func hashOf(b []byte) string { s := sha256.Sum256(b); return fmt.Sprintf("%x", s) }

// Dir fingerprints the files of one run directory that a run writes
// deterministically; TensorBoard event files, logs and builds.txt are
// left out.
func Dir(dir string) ([]Line, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Line
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		if e.IsDir() {
			if name == "bundle" {
				continue
			}
			sub, err := Dir(p)
			if err != nil {
				return nil, err
			}
			for _, l := range sub {
				out = append(out, Line{filepath.Join(name, l.Name), l.Hash})
			}
			continue
		}
		if strings.HasPrefix(name, "events.out.tfevents") || strings.HasSuffix(name, ".log") || name == "builds.txt" {
			continue // builds.txt: when and by which binary (rundir.BuildsFile), not what the run computed
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(name, ".onnx") && !strings.HasSuffix(name, ".ckpt") {
			b = relative(b)
		}
		switch {
		case strings.HasSuffix(name, ".json"):
			c, err := jsonWithoutTimes(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, Line{name, hashOf(c)})
		case strings.HasSuffix(name, ".csv"):
			c, err := csvWithoutWall(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, Line{name, hashOf(c)})
		case strings.HasSuffix(name, ".jsonl"):
			var buf bytes.Buffer
			for i, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				c, err := jsonWithoutTimes(l)
				if err != nil {
					return nil, fmt.Errorf("%s line %d: %w", p, i+1, err)
				}
				buf.Write(c)
				buf.WriteByte('\n')
			}
			out = append(out, Line{name, hashOf(buf.Bytes())})
		case strings.HasSuffix(name, ".ckpt"):
			ls, err := checkpoint(p)
			if err != nil {
				return nil, err
			}
			out = append(out, ls...)
		default:
			out = append(out, Line{name, hashOf(b)})
		}
	}
	return out, nil
}

// csvWithoutWall re-encodes a CSV without its wall_s column.
func csvWithoutWall(b []byte) ([]byte, error) {
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	drop := -1
	if len(rows) > 0 {
		for i, h := range rows[0] {
			if h == "wall_s" {
				drop = i
			}
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, r := range rows {
		if drop >= 0 && drop < len(r) {
			r = append(append([]string{}, r[:drop]...), r[drop+1:]...)
		}
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// relative replaces $FINGERPRINT_ROOT by "ROOT".
func relative(b []byte) []byte {
	root := os.Getenv("FINGERPRINT_ROOT")
	if root == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(root), []byte("ROOT"))
}

// timeKey reports whether a JSON key holds a wall-clock value.
func timeKey(k string) bool {
	return k == "exported" || k == "time" || k == "Time" || k == "Wall" || k == "seconds" || k == "Seconds" || strings.HasSuffix(k, "_s")
}

// jsonWithoutTimes re-encodes a JSON value without its wall-clock keys, at
// any depth (keys sorted, numbers kept as written).
func jsonWithoutTimes(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return json.Marshal(strip(v))
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if timeKey(k) {
				delete(x, k)
				continue
			}
			x[k] = strip(x[k])
		}
		return x
	case []any:
		for i := range x {
			x[i] = strip(x[i])
		}
		return x
	}
	return v
}

// checkpoint hashes each section of a checkpoint file.
func checkpoint(p string) ([]Line, error) {
	f, err := ckpt.Load(p)
	if err != nil {
		return nil, err
	}
	var out []Line
	base := filepath.Base(p)
	for _, name := range f.Names() {
		var h string
		if b, err := f.Bytes(name); err == nil {
			b = relative(b)
			if name == "state" {
				if b, err = jsonWithoutTimes(b); err != nil {
					return nil, fmt.Errorf("%s state: %w", p, err)
				}
			}
			h = hashOf(b)
		} else {
			v, err := f.F32(name, -1)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", p, name, err)
			}
			var buf bytes.Buffer
			for _, x := range v {
				fmt.Fprintf(&buf, "%08x", math.Float32bits(x))
			}
			h = hashOf(buf.Bytes())
		}
		out = append(out, Line{base + ":" + name, h})
	}
	return out, nil
}
