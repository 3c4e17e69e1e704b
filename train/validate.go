package train

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// problems collects the failed checks of a config's validation, in order.
type problems []string

// check records the message f (formatted with a) when ok is false.
func (p *problems) check(ok bool, f string, a ...any) {
	if !ok {
		*p = append(*p, fmt.Sprintf(f, a...))
	}
}

// algoVersion checks that algo is one of known and that version is a
// config format this code reads.
func (p *problems) algoVersion(algo string, known []string, version int) {
	p.check(slices.Contains(known, algo), "algo %q is not one of %s", algo, strings.Join(known, ", "))
	p.check(version >= 1 && version <= ConfigVersion, "config version %d is not 1..%d", version, ConfigVersion)
}

// unknownPreset is the error of a preset name that is none of paper, cpu
// and quick.
func unknownPreset(name string) error {
	return fmt.Errorf("train: unknown preset %q (paper, cpu or quick)", name)
}

// hidden checks a network's hidden layer sizes.
func (p *problems) hidden(h []int) {
	ok := len(h) > 0
	for _, n := range h {
		ok = ok && n > 0
	}
	p.check(ok, "hidden sizes %v must be a non-empty list of positive sizes", h)
}

// err is nil when every check passed, else one error listing the failures;
// what names the config ("config", "offline config").
func (p problems) err(what string) error {
	if len(p) > 0 {
		return fmt.Errorf("train: invalid %s: %s", what, strings.Join(p, "; "))
	}
	return nil
}

// configJSON is a config as indented JSON with a final newline (config.json).
func configJSON(c any) []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}
