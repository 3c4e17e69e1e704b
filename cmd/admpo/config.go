package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/admpo/admpo/internal/regfile"
	"github.com/admpo/admpo/train"
)

// A config file (--config FILE, YAML or JSON) holds config.json's keys:
// values come from the preset, then the file, then the flags given on the
// command line, so a run's config.json re-runs it.

// configFile is a parsed config file: its top-level keys and values.
type configFile struct {
	path string
	keys map[string]any
}

// maxConfigBytes bounds a --config file (a config.json is a few KiB).
const maxConfigBytes = 16 << 20

// readConfigFile reads a config file, JSON when its name ends in .json
// (strictly: YAML would take a trailing comma) and YAML otherwise, whose
// top-level keys must be keys of config.json, i.e. JSON keys of the struct
// that want points to. Every problem is a usage error naming the file and,
// where there is one, the key. An empty path (no --config) gives a nil
// file, which holds no keys.
func readConfigFile(path string, want any) (*configFile, error) {
	if path == "" {
		return nil, nil
	}
	b, err := regfile.Read(path, maxConfigBytes)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--config: %w", err))
	}
	var doc any
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // integers keep every digit
		err = dec.Decode(&doc)
		if err == nil && dec.More() {
			err = errors.New("data after the top-level value")
		}
		if err != nil {
			return nil, usageErr(fmt.Errorf("--config %s: not valid JSON: %v", path, err))
		}
		if key := duplicateKey(b); key != "" {
			return nil, usageErr(fmt.Errorf("--config %s: key %s appears twice (YAML files refuse this too)", path, key))
		}
	} else if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usageErr(fmt.Errorf("--config %s: not valid YAML: %v", path, err))
	}
	if doc == nil {
		doc = map[string]any{} // an empty file
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, usageErr(fmt.Errorf("--config %s: want a mapping of config keys to values, got %s", path, yamlKind(doc)))
	}
	for old, cur := range train.LegacyKeys { // e.g. an offline config.json from before 2026-11-27
		if v, ok := top[old]; ok {
			if _, both := top[cur]; both {
				return nil, usageErr(fmt.Errorf("--config %s: keys %q and %q (its old name) are both given: keep %q", path, cur, old, cur))
			}
			top[cur] = v
			delete(top, old)
		}
	}
	known := jsonKeys(reflect.TypeOf(want).Elem())
	var unknown []string
	for k := range top {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, usageErr(fmt.Errorf("--config %s: unknown key %q (the keys are config.json's)", path, unknown[0]))
	}
	for k, v := range top {
		nv, err := jsonValue(v)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--config %s: key %q: %v", path, k, err))
		}
		top[k] = nv
	}
	return &configFile{path: path, keys: top}, nil
}

// duplicateKey returns the first key that appears twice in one object of
// the JSON document b (which decodes), quoted, with the keys and indices
// leading to its object (e.g. "termination_model"."w"), or "" when every
// object's keys differ. encoding/json would let the last value win.
func duplicateKey(b []byte) string {
	type level struct {
		keys    map[string]bool // nil: an array
		wantKey bool
		n       int // an array's elements so far
		path    string
	}
	var stack []*level
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var key string // the last key read, while its value is being read
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.keys != nil && top.wantKey {
			q := top.path + fmt.Sprintf("%q", k)
			if top.keys[k] {
				return q
			}
			top.keys[k], top.wantKey, key = true, false, q
			continue
		}
		// tok is a value, or the end of a container.
		var here string // the path of this value
		if top != nil {
			if top.keys != nil {
				here = key
			} else {
				here = fmt.Sprintf("%s[%d]", strings.TrimSuffix(top.path, "."), top.n)
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			l := &level{path: here}
			if here != "" {
				l.path += "."
			}
			if tok == json.Delim('{') {
				l.keys, l.wantKey = map[string]bool{}, true
			}
			stack = append(stack, l)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return ""
			}
			top = stack[len(stack)-1]
		}
		if top != nil { // a value of top ended
			top.wantKey = top.keys != nil
			top.n++
		}
	}
}

// jsonKeys is the set of JSON keys of struct type t's fields, those of its
// embedded structs (train.ModelSettings, train.RuntimeSettings) included,
// as encoding/json promotes them.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if promoted(f, name) {
			maps.Copy(keys, jsonKeys(f.Type))
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys[name] = true
	}
	return keys
}

// promoted tells whether struct field f, whose JSON tag names it name,
// is an embedded struct whose fields encoding/json reads as its parent's.
func promoted(f reflect.StructField, name string) bool {
	return f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct
}

// yamlKind names the kind of a decoded YAML value for messages.
func yamlKind(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// jsonValue converts a decoded YAML value into one encoding/json can
// write: mappings must have string keys.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		return nil, errors.New("mapping keys must be strings")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// has tells whether the file sets key.
func (c *configFile) has(key string) bool {
	if c == nil {
		return false
	}
	_, ok := c.keys[key]
	return ok
}

// str is the file's string value of key ("" when absent); a value of
// another type is a usage error naming the key.
func (c *configFile) str(key string) (string, error) {
	if !c.has(key) {
		return "", nil
	}
	s, ok := c.keys[key].(string)
	if !ok {
		return "", usageErr(fmt.Errorf("--config %s: key %q: want a string, got %s", c.path, key, yamlKind(c.keys[key])))
	}
	return s, nil
}

// flagOrKey is one string setting of a new run: the flag's value when the
// flag was given, else the config file's key, else the flag's default.
type flagOrKey struct {
	dst       *string
	flag, key string
	value     string
}

// pickAll resolves each setting with pick.
func (c *configFile) pickAll(fs *pflag.FlagSet, settings ...flagOrKey) error {
	for _, s := range settings {
		var err error
		if *s.dst, err = c.pick(fs.Changed(s.flag), s.value, s.key); err != nil {
			return err
		}
	}
	return nil
}

// pick is the flag's value when the flag was given, else the file's value
// of key when it has one, else the flag's default.
func (c *configFile) pick(changed bool, flagValue, key string) (string, error) {
	if changed || !c.has(key) {
		return flagValue, nil
	}
	return c.str(key)
}

// apply sets the fields of dst (a pointer to a struct without its own
// UnmarshalJSON, so that keys the file lacks keep dst's values) from the
// file's keys. A value of the wrong type, or an unknown nested key, is a
// usage error naming the key.
func (c *configFile) apply(dst any) error {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(c.keys)
	if err != nil {
		return usageErr(fmt.Errorf("--config %s: %v", c.path, err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return usageErr(fmt.Errorf("--config %s: key %q: want %s, got a %s", c.path, te.Field, te.Type, te.Value))
		}
		msg := strings.Replace(strings.TrimPrefix(err.Error(), "json: "), "unknown field", "unknown key", 1)
		return usageErr(fmt.Errorf("--config %s: %s", c.path, msg))
	}
	return nil
}

// drop removes keys from the file's values (keys that a flag given on the
// command line replaces).
func (c *configFile) drop(keys ...string) {
	if c == nil {
		return
	}
	for _, k := range keys {
		delete(c.keys, k)
	}
}

// plainOnline and plainOffline are the config types without their
// UnmarshalJSON (which starts from the legacy values), so that a file
// overlays the preset.
type (
	plainOnline  train.OnlineConfig
	plainOffline train.OfflineConfig
)

// layerConfig finishes a new run's config cfg (a *train.OnlineConfig or
// *train.OfflineConfig holding the preset's values; plain is the same
// pointer as *plainOnline or *plainOffline): it lays over it the --config
// file's keys (cf, nil without a file) with their legacy defaults, then
// given (which sets what the command takes from the flags given), then the
// override flags ov (bound by fields to cfg's fields), and validates it.
func layerConfig(cf *configFile, cfg interface{ Validate() error }, plain any, given func(), ov *overrides,
	fields map[string]any) error {
	if err := cf.apply(plain); err != nil {
		return err
	}
	if err := cf.legacyDefaults(cfg); err != nil {
		return err
	}
	given()
	if err := ov.apply(fields); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	return nil
}

// configHelp is the --config flag's help.
const configHelp = "YAML or JSON file of config.json keys (a run's config.json re-runs it); values come from the\n" +
	"preset, then the file, then the flags given; an unknown key is an error"

// legacyDefaults gives the keys that a file with a config_version older
// than train.ConfigVersion lacks the meaning that train's own config.json
// reader gives them (the values that reproduce such a run): each field
// whose key the file lacks and that the reader sets to a non-zero value
// for an empty object is copied from it. cfg points to the config (its
// type has the reader as its UnmarshalJSON).
func (c *configFile) legacyDefaults(cfg any) error {
	if v, ok := c.number("config_version"); !ok || v >= train.ConfigVersion {
		return nil
	}
	legacy := reflect.New(reflect.TypeOf(cfg).Elem())
	if err := json.Unmarshal([]byte("{}"), legacy.Interface()); err != nil {
		return err
	}
	c.copyLacking(reflect.ValueOf(cfg).Elem(), legacy.Elem())
	return nil
}

// copyLacking copies into the struct dst each non-zero field of src (of
// dst's type) whose JSON key the file lacks, looking into embedded structs.
func (c *configFile) copyLacking(dst, src reflect.Value) {
	for i := 0; i < dst.NumField(); i++ {
		f := dst.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if promoted(f, name) {
			c.copyLacking(dst.Field(i), src.Field(i))
			continue
		}
		if name == "" || name == "-" || c.has(name) || src.Field(i).IsZero() {
			continue
		}
		dst.Field(i).Set(src.Field(i))
	}
}

// number is the file's numeric value of key, if it has one.
func (c *configFile) number(key string) (float64, bool) {
	if !c.has(key) {
		return 0, false
	}
	switch x := c.keys[key].(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
