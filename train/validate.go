package train

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/admpo/admpo/dynamics"
)

// problems collects the failed checks of a config's validation, in order.
type problems []string

// check records the message f (formatted with a) when ok is false.
func (p *problems) check(ok bool, f string, a ...any) {
	if !ok {
		*p = append(*p, fmt.Sprintf(f, a...))
	}
}

// algo checks that algo is one of known.
func (p *problems) algo(algo string, known []string) {
	p.check(slices.Contains(known, algo), "algo %q is not one of %s", algo, strings.Join(known, ", "))
}

// adm checks an ADM's backtracking length, size and roll-out engine.
func (p *problems) adm(m, hidden, layers, blocks int, engine string) {
	p.check(m >= 1, "m %d must be >= 1", m)
	p.check(hidden > 0 && layers > 0 && blocks >= 0, "ADM size %dx%d/%d invalid", layers, hidden, blocks)
	p.check(engine == "incremental" || engine == "direct", "engine %q must be incremental or direct", engine)
}

// hidden checks a network's hidden layer sizes.
func (p *problems) hidden(h []int) {
	ok := len(h) > 0
	for _, n := range h {
		ok = ok && n > 0
	}
	p.check(ok, "hidden sizes %v must be a non-empty list of positive sizes", h)
}

// fit checks the ADM fit's epoch passes and early-stopping rule.
func (p *problems) fit(passes int, improve string) {
	p.check(passes >= 1, "model epoch passes %d must be >= 1", passes)
	p.check(improve == "scaled" || improve == "authors", "model improve %q must be scaled or authors", improve)
}

// ensemble checks an ensemble's member and elite counts.
// model checks the dynamics model settings of algo: the ADM's (learning
// rate, sizes, engine, fit) for "admpo", the ensemble's for ensembleAlgo;
// roll-out dropout belongs to the ADM only.
func (p *problems) model(algo, ensembleAlgo string, dc dynamics.Config) {
	if algo == "admpo" {
		p.check(dc.LR > 0, "model learning rate %v must be positive", dc.LR)
		p.adm(dc.M, dc.ADMHidden, dc.ADMLayers, dc.ADMResBlocks, dc.Engine)
		p.fit(dc.EpochPasses, dc.Improve)
	}
	p.check(!dc.RolloutDropout || algo == "admpo", "rollout dropout applies to the ADM (admpo), not %s", algo)
	if algo == ensembleAlgo {
		p.ensemble(dc.Ensemble, dc.Elites)
	}
}

// ensemble checks the ensemble size and its elites.
func (p *problems) ensemble(members, elites int) {
	p.check(members > 0 && elites > 0 && elites <= members, "ensemble %d / elites %d invalid", members, elites)
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
