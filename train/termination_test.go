package train

import (
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
)

// knownRule is the synthetic data's true termination rule: a parabola,
// linear in x0 and quadratic in x1 (only representable with the squared
// features).
func knownRule(x []float32) bool { return x[0]+0.5*x[1]*x[1] > 1.0 }

// byoDataset makes n rows of a made-up system with 5 observation and 2
// action values: episodes that end when knownRule fires on the next
// observation, or after 40 steps (timeout).
func byoDataset(n int, seed int64) *datasets.Dataset {
	const od, ad = 5, 2
	rng := rand.New(rand.NewSource(seed))
	d := &datasets.Dataset{ObsDim: od, ActDim: ad, N: n}
	reset := func() []float32 {
		s := make([]float32, od)
		for j := range s {
			s[j] = float32(0.3 * rng.NormFloat64())
		}
		return s
	}
	s, steps := reset(), 0
	for i := 0; i < n; i++ {
		a := []float32{float32(rng.Float64()*4 - 2), float32(rng.Float64()*2 - 1)}
		next := make([]float32, od)
		for j := range next {
			next[j] = 0.9*s[j] + 0.25*a[j%ad] + float32(0.3*rng.NormFloat64())
		}
		steps++
		term := knownRule(next)
		d.Obs = append(d.Obs, s...)
		d.Act = append(d.Act, a...)
		d.Rew = append(d.Rew, -next[0]*next[0])
		d.NextObs = append(d.NextObs, next...)
		d.Terminal = append(d.Terminal, term)
		d.Timeout = append(d.Timeout, !term && steps == 40)
		s = next
		if term || steps == 40 {
			s, steps = reset(), 0
		}
	}
	return d
}

// TestFitTerminationLearnsKnownRule fits the learned termination on a
// data set whose rule is known and checks it on fresh observations drawn
// over the whole state region against that rule; a data set without
// terminals is refused.
func TestFitTerminationLearnsKnownRule(t *testing.T) {
	d := byoDataset(20000, 1)
	m, err := FitTermination(d)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(9))
	var right, pos, hit int
	const n = 20000
	for i := 0; i < n; i++ {
		x := make([]float32, 5)
		for j := range x {
			x[j] = float32(1.2 * rng.NormFloat64())
		}
		want := knownRule(x)
		got := m.Done(x)
		if got == want {
			right++
		}
		if want {
			pos++
			if got {
				hit++
			}
		}
	}
	acc, rec := float64(right)/n, float64(hit)/float64(pos)
	t.Logf("fresh observations: accuracy %.4f, recall %.4f (%d terminal); on the data: %.4f, %.4f", acc, rec, pos, m.Accuracy, m.Recall)
	if acc < 0.99 || rec < 0.98 {
		t.Fatalf("learned rule: accuracy %.4f, recall %.4f on fresh observations", acc, rec)
	}
	if !m.Done([]float32{float32(math.NaN()), 0, 0, 0, 0}) {
		t.Fatal("a NaN observation is not terminal")
	}
	for i := range d.Terminal {
		d.Terminal[i] = false
	}
	if _, err := FitTermination(d); err == nil {
		t.Fatal("a data set without terminals gave a termination rule")
	}
}

// TestOfflineBringYourOwnData trains ADMPO-OFF on data of a made-up system
// (5 observation, 2 action values, no task): no evaluation (NaN rows), the
// learned termination and the sizes recorded in config.json, the policy's
// action bounds from the data, and a resume that continues; bad files make
// no run directory.
func TestOfflineBringYourOwnData(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	path := filepath.Join(tmp, "robot-log.hdf5")
	d := byoDataset(1500, 2)
	if err := datasets.WriteD4RL(path, d); err != nil {
		t.Fatal(err)
	}
	cfg := Fixtures.TinyOfflineConfig(t, "admpo", "medium", path)
	cfg.Env, cfg.Name, cfg.Kind, cfg.Termination = "", "robot-log", "", "learned"
	cfg.Epochs = 2
	dir := filepath.Join(tmp, "run")
	Fixtures.RunOfflineToEnd(t, cfg, dir)
	var saved OfflineConfig
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil || json.Unmarshal(b, &saved) != nil {
		t.Fatalf("config.json: %v", err)
	}
	if saved.Env != "" || saved.ObsDim != 5 || saved.ActDim != 2 || saved.Termination != "learned" || saved.TermModel == nil ||
		len(saved.TermModel.W) != 10 || len(saved.ActionLow) != 2 || saved.ActionLow[0] > -1.9 || saved.ActionHigh[0] < 1.9 {
		t.Fatalf("config %s", b)
	}
	recs, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
	if err != nil || len(recs) != 2 || !math.IsNaN(recs[0].EvalMean) {
		t.Fatalf("progress: %v %+v, want 2 rows without evaluation", err, recs)
	}
	p := testfix.OpenRunPolicy(t, dir)
	act := make([]float32, 2)
	if err := p.Act(make([]float32, 5), nil, act); err != nil || p.ObsDim != 5 || act[0] < -2.01 || act[0] > 2.01 || act[1] < -1.01 || act[1] > 1.01 {
		t.Fatalf("policy %d->%d, action %v (%v)", p.ObsDim, p.ActDim, act, err)
	}
	// Resuming reads the saved rule, not a refit; the roll-out uses it.
	r := resumed(t, ResumeOffline, dir)
	if r.task.Done(make([]float32, 5)) || !r.task.Done([]float32{3, 0, 0, 0, 0}) {
		t.Fatal("the resumed run's termination does not follow the learned rule")
	}

	// Bad files: no run directory is left behind.
	bad := func(name string, edit func(d *datasets.Dataset)) string {
		d := byoDataset(300, 3)
		edit(d)
		p := filepath.Join(tmp, name+".hdf5")
		if err := datasets.WriteD4RL(p, d); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, path, want string }{
		{"no-episodes", bad("noep", func(d *datasets.Dataset) { clear(d.Terminal); clear(d.Timeout) }), "no episodes"},
		{"no-terminals", bad("noterm", func(d *datasets.Dataset) { clear(d.Terminal); d.Timeout[299] = true; d.Timeout[100] = true }), "no terminals"},
		{"missing", filepath.Join(tmp, "absent.hdf5"), "absent.hdf5"},
		{"wide-config", path, "5 observation"}, // a config naming other sizes than the data
	} {
		c2 := cfg
		c2.Dataset = c.path
		if c.name == "wide-config" {
			c2.Env, c2.Termination = "hopper", "task"
		}
		out := filepath.Join(tmp, "bad-"+c.name)
		_, err := NewOffline(c2, out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: a run directory was left behind", c.name)
		}
	}
}
