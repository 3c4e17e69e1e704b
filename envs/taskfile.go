package envs

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/stats"
)

// The built-in tasks as task files: the same tasks as the Go definitions in
// tasks.go, which a test holds them to, step for step.
//
//go:embed tasks/*.yaml
var taskFiles embed.FS

// A task file (YAML) describes a MuJoCo task: the MJCF model (a path
// relative to the file), the frame skip, the observation, the reward terms,
// the termination rule, the reset noise and the episode limit. Its keys are
// taskSpec's; envs/tasks/hopper.yaml is an example.
type taskSpec struct {
	Name            string     `yaml:"name"`    // the task's name (run directories, manifests)
	Summary         string     `yaml:"summary"` // one line
	Model           string     `yaml:"model"`   // MJCF file, relative to the task file
	FrameSkip       int        `yaml:"frame_skip"`
	MaxEpisodeSteps int        `yaml:"max_episode_steps"` // 0: 1000
	Preset          string     `yaml:"preset"`            // built-in task whose training presets to take (default hopper)
	Observation     obsSpec    `yaml:"observation"`
	Reward          rewardSpec `yaml:"reward"`
	Termination     termSpec   `yaml:"termination"`
	ResetNoise      noiseSpec  `yaml:"reset_noise"`
}

// obsSpec: the observation is qpos[skip_qpos:] then qvel, velocities
// clipped to ±clip_velocity (0: not clipped).
type obsSpec struct {
	SkipQpos     int     `yaml:"skip_qpos"`
	ClipVelocity float64 `yaml:"clip_velocity"`
}

// rewardSpec: reward = forward.weight · dx/dt + alive - ctrl_cost · |a|² + constant.
type rewardSpec struct {
	Forward  forwardSpec `yaml:"forward"`
	Alive    float64     `yaml:"alive"`     // healthy reward per step
	CtrlCost float64     `yaml:"ctrl_cost"` // weight of the sum of squared actions
	Constant float64     `yaml:"constant"`  // reward per step outside the terms
}

// forwardSpec: the x velocity of "root" (qpos[0]), "mass_centre" (of all
// bodies) or "body:NAME" (the body's frame, as MuJoCo last computed it).
type forwardSpec struct {
	Weight float64 `yaml:"weight"`
	Of     string  `yaml:"of"`
}

// termSpec is the termination rule: the episode ends when a healthy
// condition fails or (finite: true) a qpos or qvel value is not finite.
// "termination: none" (or no termination key) never ends an episode.
type termSpec struct {
	None    bool       `yaml:"-"`
	Finite  bool       `yaml:"finite"`
	Healthy []condSpec `yaml:"healthy"`
}

// UnmarshalYAML takes "none" or a mapping.
func (t *termSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "none" {
			return fmt.Errorf("line %d: termination: want none or a mapping, got %q", n.Line, n.Value)
		}
		*t = termSpec{None: true}
		return nil
	}
	type plain termSpec
	return n.Decode((*plain)(t))
}

// condSpec is one healthy condition: a selector (joint, qpos, qvel or obs)
// and bounds (min/max inclusive, above/below strict).
type condSpec struct {
	Joint     string   `yaml:"joint"`     // a joint's qpos value
	Component *int     `yaml:"component"` // which qpos value of a free (7) or ball (4) joint
	Qpos      string   `yaml:"qpos"`      // an index or a slice "a:b" of qpos
	Qvel      string   `yaml:"qvel"`      // of qvel
	Obs       string   `yaml:"obs"`       // of the observation
	Min       *float64 `yaml:"min"`
	Max       *float64 `yaml:"max"`
	Above     *float64 `yaml:"above"`
	Below     *float64 `yaml:"below"`
}

// noiseSpec: the initial state is qpos0 + U(-scale, scale) and qvel
// U(-scale, scale) (qvel: uniform) or scale·N(0,1) (qvel: normal).
type noiseSpec struct {
	Scale float64 `yaml:"scale"`
	Qvel  string  `yaml:"qvel"`
}

// LoadTaskFile reads the task file at path and compiles its model to check
// it: unknown keys, missing joints or bodies, a model MuJoCo does not load
// and inconsistent values are errors naming the file (and the line or the
// name).
func LoadTaskFile(path string) (*Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("envs: task file: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("envs: task file %s: %w", path, err)
	}
	return parseTask(path, b, func(model string) (string, []byte, func() (*sim, error), error) {
		p := model
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(abs), filepath.FromSlash(model))
		}
		x, err := os.ReadFile(p)
		if err != nil {
			return "", nil, nil, err
		}
		return p, x, func() (*sim, error) { return loadSimFile(p) }, nil
	}, abs)
}

// BuiltinTaskFile returns the task file of the built-in task called name
// (Lookup's spelling), as shipped (embedded) with admpo.
func BuiltinTaskFile(name string) ([]byte, error) {
	t, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return taskFiles.ReadFile("tasks/" + t.Name + ".yaml")
}

// LoadBuiltinTaskFile reads the embedded task file of a built-in task: the
// same task as Lookup(name) returns, from its task file.
func LoadBuiltinTaskFile(name string) (*Task, error) {
	b, err := BuiltinTaskFile(name)
	if err != nil {
		return nil, err
	}
	t, _ := Lookup(name)
	file := "tasks/" + t.Name + ".yaml"
	return parseTask(file, b, func(model string) (string, []byte, func() (*sim, error), error) {
		p := path.Join("tasks", model)
		x, err := assets.ReadFile(p)
		if err != nil {
			return "", nil, nil, err
		}
		return p, x, func() (*sim, error) { return loadSim(path.Base(p), x) }, nil
	}, "")
}

// modelReader resolves a task file's model path: the path to show, the
// MJCF's content and a loader.
type modelReader func(model string) (string, []byte, func() (*sim, error), error)

var taskName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// parseTask builds a Task from a task file's content b (name: how to
// call the file in errors; file: what Task.File records).
func parseTask(name string, b []byte, model modelReader, file string) (*Task, error) {
	fail := func(format string, a ...any) (*Task, error) {
		return nil, fmt.Errorf("envs: task file %s: "+format, append([]any{name}, a...)...)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fail("not valid YAML: %v", err)
	}
	if len(doc.Content) == 0 {
		return fail("empty")
	}
	if err := checkKeys(doc.Content[0], reflect.TypeOf(taskSpec{}), ""); err != nil {
		return fail("%v", err)
	}
	var sp taskSpec
	if err := doc.Content[0].Decode(&sp); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fail("%s", strings.Join(te.Errors, "; "))
		}
		return fail("%v", err)
	}
	switch {
	case !taskName.MatchString(sp.Name):
		return fail("name %q: want letters, digits, '_', '.' or '-'", sp.Name)
	case sp.Model == "":
		return fail("no model (the MJCF file, relative to the task file)")
	case sp.FrameSkip < 1:
		return fail("frame_skip %d must be >= 1", sp.FrameSkip)
	case sp.MaxEpisodeSteps < 0:
		return fail("max_episode_steps %d must be >= 0 (0: %d)", sp.MaxEpisodeSteps, MaxEpisodeSteps)
	case sp.Observation.ClipVelocity < 0 || !finite(sp.Observation.ClipVelocity):
		return fail("observation: clip_velocity %v must be finite and >= 0", sp.Observation.ClipVelocity)
	case !finite(sp.Reward.Forward.Weight) || !finite(sp.Reward.Alive) || !finite(sp.Reward.CtrlCost) || !finite(sp.Reward.Constant):
		return fail("reward: the weights must be finite")
	case !(sp.ResetNoise.Scale >= 0) || !finite(sp.ResetNoise.Scale):
		return fail("reset_noise: scale %v must be finite and >= 0", sp.ResetNoise.Scale)
	}
	if sp.Preset == "" {
		sp.Preset = "hopper"
	}
	pt, err := Lookup(sp.Preset)
	if err != nil {
		return fail("preset %q: not a built-in task (%s)", sp.Preset, strings.Join(Names(), ", "))
	}
	mpath, xml, load, err := model(sp.Model)
	if err != nil {
		return fail("model %s: %v", sp.Model, err)
	}
	s, err := load()
	if err != nil {
		return fail("%s", strings.TrimSpace(strings.TrimPrefix(err.Error(), "envs: ")))
	}
	defer s.close()
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write(xml)
	t := &Task{Name: sp.Name, Model: mpath, FrameSkip: sp.FrameSkip, ActDim: s.nu, Summary: sp.Summary,
		Forward: sp.Reward.Forward.Weight, Healthy: sp.Reward.Alive, CtrlCost: sp.Reward.CtrlCost, constant: sp.Reward.Constant,
		MaxSteps: sp.MaxEpisodeSteps, File: file, Digest: hex.EncodeToString(h.Sum(nil)), Preset: pt.Name,
		obsSkip: sp.Observation.SkipQpos, velClip: sp.Observation.ClipVelocity, load: load}
	if t.obsSkip < 0 || t.obsSkip > s.nq {
		return fail("observation: skip_qpos %d must be in [0, %d] (the model has %d qpos values)", t.obsSkip, s.nq, s.nq)
	}
	t.ObsDim = s.nq - t.obsSkip + s.nv
	if s.nu == 0 {
		return fail("the model %s has no actuators", sp.Model)
	}
	switch of := sp.Reward.Forward.Of; {
	case of == "" || of == "root":
		if s.nq == 0 {
			return fail("reward: forward of root: the model has no qpos")
		}
		t.xPosition = rootX
	case of == "mass_centre":
		t.xPosition = massCentreX
	case strings.HasPrefix(of, "body:"):
		b := s.bodyID(strings.TrimPrefix(of, "body:"))
		if b < 0 {
			return fail("reward: forward: the model has no body %q", strings.TrimPrefix(of, "body:"))
		}
		t.xPosition = func(s *sim) float64 { return s.xpos[3*b] }
	default:
		return fail("reward: forward: of %q: want root, mass_centre or body:NAME", of)
	}
	switch sp.ResetNoise.Qvel {
	case "", "uniform":
		t.resetNoise = uniformNoise(sp.ResetNoise.Scale)
	case "normal":
		t.resetNoise = uniformPosNormalVel(sp.ResetNoise.Scale)
	default:
		return fail("reset_noise: qvel %q: want uniform or normal", sp.ResetNoise.Qvel)
	}
	if err := t.setTermination(sp.Termination, s); err != nil {
		return fail("termination: %v", err)
	}
	return t, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// cond is a compiled healthy condition on one value.
type cond struct {
	src            byte // 'p' qpos, 'v' qvel, 'o' observation
	i              int
	lo, hi         float64
	hasLo, hasHi   bool
	loOpen, hiOpen bool // strict bounds
}

func (c cond) holds(v float64) bool {
	if c.hasLo && !(v > c.lo || !c.loOpen && v == c.lo) {
		return false
	}
	if c.hasHi && !(v < c.hi || !c.hiOpen && v == c.hi) {
		return false
	}
	return true
}

// setTermination compiles the termination rule into the state rule
// (isHealthy) and, where every condition reads a value the observation
// holds, the observation rule (Done).
func (t *Task) setTermination(ts termSpec, s *sim) error {
	if ts.None || !ts.Finite && len(ts.Healthy) == 0 {
		t.isHealthy = func(qpos, qvel []float64) bool { return true }
		t.Done = func([]float32) bool { return false }
		t.DoneSpec = &rollout.DoneSpec{} // never
		return nil
	}
	nq, nv, skip, clip := s.nq, s.nv, t.obsSkip, t.velClip
	var cs []cond
	for k, c := range ts.Healthy {
		at := fmt.Sprintf("healthy[%d]", k)
		sel := 0
		for _, v := range []string{c.Joint, c.Qpos, c.Qvel, c.Obs} {
			if v != "" {
				sel++
			}
		}
		if sel != 1 {
			return fmt.Errorf("%s: give one of joint, qpos, qvel or obs", at)
		}
		if c.Min != nil && c.Above != nil || c.Max != nil && c.Below != nil {
			return fmt.Errorf("%s: give min or above, max or below, not both", at)
		}
		b := cond{}
		for _, x := range []struct {
			v        *float64
			lo, open bool
		}{{c.Min, true, false}, {c.Above, true, true}, {c.Max, false, false}, {c.Below, false, true}} {
			if x.v == nil {
				continue
			}
			if math.IsNaN(*x.v) {
				return fmt.Errorf("%s: a bound is NaN", at)
			}
			if x.lo {
				b.lo, b.hasLo, b.loOpen = *x.v, true, x.open
			} else {
				b.hi, b.hasHi, b.hiOpen = *x.v, true, x.open
			}
		}
		if !b.hasLo && !b.hasHi {
			return fmt.Errorf("%s: no bound (min, max, above or below)", at)
		}
		if c.Component != nil && c.Joint == "" {
			return fmt.Errorf("%s: component goes with joint", at)
		}
		var idx []int
		var err error
		switch {
		case c.Joint != "":
			adr, n, ok := s.jointQpos(c.Joint)
			if !ok {
				return fmt.Errorf("%s: the model has no joint %q", at, c.Joint)
			}
			comp := 0
			if c.Component != nil {
				comp = *c.Component
			} else if n > 1 {
				return fmt.Errorf("%s: joint %q has %d qpos values: give its component", at, c.Joint, n)
			}
			if comp < 0 || comp >= n {
				return fmt.Errorf("%s: component %d of joint %q must be in [0, %d)", at, comp, c.Joint, n)
			}
			b.src, idx = 'p', []int{adr + comp}
		case c.Qpos != "":
			b.src = 'p'
			idx, err = indices(c.Qpos, nq)
		case c.Qvel != "":
			b.src = 'v'
			idx, err = indices(c.Qvel, nv)
		default:
			b.src = 'o'
			idx, err = indices(c.Obs, t.ObsDim)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
		for _, i := range idx {
			b.i = i
			cs = append(cs, b)
		}
	}
	fin := ts.Finite
	// observed is the observation's entry o computed from the state.
	observed := func(qpos, qvel []float64, o int) float64 {
		if o < nq-skip {
			return qpos[o+skip]
		}
		v := qvel[o-(nq-skip)]
		if clip > 0 {
			v = math.Max(-clip, math.Min(clip, v))
		}
		return v
	}
	t.isHealthy = func(qpos, qvel []float64) bool {
		if fin && (!allFinite64(qpos) || !allFinite64(qvel)) {
			return false
		}
		for _, c := range cs {
			var v float64
			switch c.src {
			case 'p':
				v = qpos[c.i]
			case 'v':
				v = qvel[c.i]
			default:
				v = observed(qpos, qvel, c.i)
			}
			if !c.holds(v) {
				return false
			}
		}
		return true
	}
	// The observation rule: each condition on the entry that holds its value,
	// compared in float64 (the state rule's bounds exactly). The Go rules of
	// hopper, walker2d, ant and humanoid compare float32 observations with
	// float32 constants: the two can differ only on an observation exactly
	// equal to float32(bound). A condition on a clipped velocity sees the
	// clipped value.
	oc := make([]cond, 0, len(cs))
	for _, c := range cs {
		switch c.src {
		case 'p':
			if c.i < skip {
				t.Done = nil // reads a value the observation leaves out
				return nil
			}
			c.i -= skip
		case 'v':
			c.i += nq - skip
		}
		oc = append(oc, c)
	}
	// The same rule as data: one range per condition, its float64 bounds
	// converted to float32 ones that decide every float32 value alike.
	spec := &rollout.DoneSpec{Finite: fin}
	for _, c := range oc {
		r := rollout.Range{Dim: c.i, HasLo: c.hasLo, HasHi: c.hasHi}
		if c.hasLo {
			r.Lo, r.LoIncl = bound32(c.lo, true, !c.loOpen)
		}
		if c.hasHi {
			r.Hi, r.HiIncl = bound32(c.hi, false, !c.hiOpen)
		}
		spec.Ranges = append(spec.Ranges, r)
	}
	t.DoneSpec = spec
	t.Done = func(o []float32) bool {
		if fin && !stats.Finite(o) {
			return true
		}
		for _, c := range oc {
			if !c.holds(float64(o[c.i])) {
				return true
			}
		}
		return false
	}
	return nil
}

// indices parses an index "i" or a slice "a:b" (either side may be left
// out; negative counts from the end) of a vector of n values.
func indices(s string, n int) ([]int, error) {
	num := func(x string, def int) (int, error) {
		if x = strings.TrimSpace(x); x == "" {
			return def, nil
		}
		v, err := strconv.Atoi(x)
		if err != nil {
			return 0, fmt.Errorf("%q: want an index or a slice a:b", s)
		}
		if v < 0 {
			v += n
		}
		return v, nil
	}
	a, b, isSlice := strings.Cut(s, ":")
	lo, err := num(a, 0)
	if err != nil {
		return nil, err
	}
	hi := lo + 1
	if isSlice {
		if hi, err = num(b, n); err != nil {
			return nil, err
		}
	}
	if lo < 0 || hi > n || lo >= hi {
		return nil, fmt.Errorf("%q selects nothing of %d values", s, n)
	}
	var idx []int
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	return idx, nil
}

// checkKeys refuses a mapping key that the struct type t has no field for,
// naming the key, its line and the keys there are.
func checkKeys(n *yaml.Node, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				if err := checkKeys(c, t.Elem(), at); err != nil {
					return err
				}
			}
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
		return nil // decoding reports a wrong kind of value
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			fields[tag] = t.Field(i).Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		if !ok {
			var known []string
			for f := range fields {
				known = append(known, f)
			}
			sort.Strings(known)
			where := ""
			if at != "" {
				where = " in " + at
			}
			return fmt.Errorf("line %d: unknown key %q%s (known: %s)", k.Line, k.Value, where, strings.Join(known, ", "))
		}
		sub := k.Value
		if at != "" {
			sub = at + "." + k.Value
		}
		if err := checkKeys(n.Content[i+1], ft, sub); err != nil {
			return err
		}
	}
	return nil
}

// TaskFileHelp is the task file format in brief, for --help texts.
const TaskFileHelp = `a MuJoCo task file (YAML; a built-in task's: admpo envs show --env TASK):
  name, summary, model (MJCF path relative to the file), frame_skip, max_episode_steps (1000),
  preset (the built-in task whose presets to take: hopper),
  observation: {skip_qpos, clip_velocity},
  reward: {forward: {weight, of: root|mass_centre|body:NAME}, alive, ctrl_cost, constant},
  termination: none | {finite, healthy: [{joint|qpos|qvel|obs, component, min|above, max|below}]},
  reset_noise: {scale, qvel: uniform|normal}`
