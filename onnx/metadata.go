package onnx

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/admpo/admpo/onnx/schema"
)

// JoinFloats writes v in the float-list metadata format (schema.JoinFloats,
// which runtimes read with schema.ParseFloats).
func JoinFloats(v []float32) string { return schema.JoinFloats(v) }

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// export is the frame of every exporter: it wraps invalid, the model's
// validation error, or builds a graph called name with doc string doc by
// build and serializes it with the caller's metadata user merged with the
// metadata build returns; what names the model in errors ("actor", "ADM").
func export(what string, invalid error, name, doc string, user map[string]string,
	build func(g *Graph) map[string]string) ([]byte, error) {
	if invalid != nil {
		return nil, fmt.Errorf("onnx: export %s: %w", what, invalid)
	}
	g := NewGraph(name, doc)
	md, err := mergeMeta(user, build(g))
	if err != nil {
		return nil, fmt.Errorf("onnx: export %s: %w", what, err)
	}
	return g.Model(md)
}

// mergeMeta combines the caller's metadata with the exporter's own keys.
func mergeMeta(user, own map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(user)+len(own)+2)
	for k, v := range user {
		if k == "" {
			return nil, fmt.Errorf("empty metadata key")
		}
		out[k] = v
	}
	own[schema.MetaVersion] = Version
	for k, v := range own {
		if u, ok := user[k]; ok && u != v {
			return nil, fmt.Errorf("metadata key %q: caller gives %q but the model has %q", k, u, v)
		}
		out[k] = v
	}
	return out, nil
}
