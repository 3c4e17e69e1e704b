package envs

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustMakeTask(t *testing.T, task *Task) *Env {
	t.Helper()
	e, err := MakeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestBuiltinTaskFilesMatchGo plays every built-in task both ways, the Go
// definition (tasks.go, the reference) and its shipped task file
// (tasks/*.yaml), with the same seed and actions: the observations,
// rewards, reward terms, terminations and truncations must be identical,
// and so must the observation rule (Done) on every observation seen and on
// perturbed ones.
func TestBuiltinTaskFilesMatchGo(t *testing.T) {
	const steps = 2100 // past the 1000-step truncation
	for _, name := range Names() {
		ft, err := LoadBuiltinTaskFile(name)
		if err != nil {
			t.Fatal(err)
		}
		g, f := mustMake(t, name), mustMakeTask(t, ft)
		gt := g.Task
		if ft.Name != gt.Name || ft.ObsDim != gt.ObsDim || ft.ActDim != gt.ActDim || ft.FrameSkip != gt.FrameSkip ||
			ft.Summary != gt.Summary || ft.EpisodeLimit() != gt.EpisodeLimit() || g.Dt() != f.Dt() || ft.Preset != gt.Name {
			t.Fatalf("%s: task file gives %+v, Go %+v", name, *ft, *gt)
		}
		if !reflect.DeepEqual(g.ActionLow(), f.ActionLow()) || !reflect.DeepEqual(g.ActionHigh(), f.ActionHigh()) {
			t.Fatalf("%s: action bounds differ", name)
		}
		if ft.Done == nil {
			t.Fatalf("%s: the task file has no observation rule", name)
		}
		ra, rb := rand.New(rand.NewSource(11)), rand.New(rand.NewSource(11))
		probe := rand.New(rand.NewSource(12))
		og, of := g.Reset(5), f.Reset(5)
		if !reflect.DeepEqual(og, of) {
			t.Fatalf("%s: first observations differ", name)
		}
		var terms, truncs int
		for i := 0; i < steps; i++ {
			sg, err := g.Step(randomAction(g, ra))
			if err != nil {
				t.Fatal(err)
			}
			sf, err := f.Step(randomAction(f, rb))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sg, sf) {
				t.Fatalf("%s step %d: Go %+v, task file %+v", name, i, sg, sf)
			}
			o := Float32(sg.Obs)
			if gt.Done(o) != ft.Done(o) {
				t.Fatalf("%s step %d: Done Go %v, task file %v", name, i, gt.Done(o), ft.Done(o))
			}
			// Perturbed observations probe the rule's bands.
			for k := 0; k < 4; k++ {
				p := append([]float32(nil), o...)
				j := probe.Intn(len(p))
				p[j] += float32(probe.NormFloat64() * (0.3 + math.Abs(float64(p[j]))))
				if k == 3 {
					p[j] = float32(math.NaN())
				}
				if gt.Done(p) != ft.Done(p) {
					t.Fatalf("%s step %d: Done on %v: Go %v, task file %v", name, i, p, gt.Done(p), ft.Done(p))
				}
			}
			if sg.Terminated {
				terms++
			}
			if sg.Truncated {
				truncs++
			}
			if sg.Terminated || sg.Truncated {
				if og, of = g.ResetNext(), f.ResetNext(); !reflect.DeepEqual(og, of) {
					t.Fatalf("%s step %d: reset observations differ", name, i)
				}
			}
		}
		t.Logf("%s: %d steps identical (%d terminations, %d truncations)", name, steps, terms, truncs)
		if name != "halfcheetah" && name != "ant" && terms == 0 {
			t.Errorf("%s: no termination in %d random steps: the rule went untested", name, steps)
		}
		if name == "halfcheetah" && truncs == 0 {
			t.Errorf("%s: no truncation in %d steps", name, steps)
		}
	}
}

// writeTask writes a task file (and files beside it) into a temporary
// directory and returns its path.
func writeTask(t *testing.T, yaml string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func hopperFile(t *testing.T) (string, string) {
	b, err := BuiltinTaskFile("hopper")
	if err != nil {
		t.Fatal(err)
	}
	x, err := assets.ReadFile("assets/hopper.xml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "../assets/hopper.xml", "hopper.xml", 1), string(x)
}

func TestTaskFileFromDiskMatchesBuiltin(t *testing.T) {
	y, x := hopperFile(t)
	p := writeTask(t, y, map[string]string{"hopper.xml": x})
	ft, err := LoadTaskFile(p)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(p)
	if ft.File != abs || len(ft.Digest) != 64 {
		t.Fatalf("File %q Digest %q", ft.File, ft.Digest)
	}
	g, f := mustMake(t, "hopper"), mustMakeTask(t, ft)
	ra, rb := rand.New(rand.NewSource(3)), rand.New(rand.NewSource(3))
	g.Reset(9)
	f.Reset(9)
	for i := 0; i < 300; i++ {
		sg, _ := g.Step(randomAction(g, ra))
		sf, _ := f.Step(randomAction(f, rb))
		if !reflect.DeepEqual(sg, sf) {
			t.Fatalf("step %d differs", i)
		}
		if sg.Terminated {
			g.ResetNext()
			f.ResetNext()
		}
	}
	// The digest follows the content of the task file and of the model.
	p2 := writeTask(t, y, map[string]string{"hopper.xml": x + "\n"})
	ft2, err := LoadTaskFile(p2)
	if err != nil {
		t.Fatal(err)
	}
	if ft2.Digest == ft.Digest {
		t.Error("a changed MJCF file kept the digest")
	}
}

func TestTaskFileErrors(t *testing.T) {
	y, x := hopperFile(t)
	model := map[string]string{"hopper.xml": x}
	for _, c := range []struct {
		name, yaml string
		files      map[string]string
		want       []string
	}{
		{"unknown top key", y + "rewrad: 1\n", model, []string{`line 22: unknown key "rewrad"`}},
		{"unknown nested key", strings.Replace(y, "  alive: 1\n", "  alive: 1\n  alvie: 2\n", 1), model,
			[]string{`line 13: unknown key "alvie" in reward`, "ctrl_cost"}},
		{"unknown key in a condition", strings.Replace(y, "{joint: rootz, above: 0.7}", "{joint: rootz, abov: 0.7}", 1), model,
			[]string{`unknown key "abov" in termination.healthy`}},
		{"missing joint", strings.Replace(y, "joint: rootz", "joint: rootq", 1), model, []string{`no joint "rootq"`}},
		{"missing body", strings.Replace(y, "of: root}", "of: body:shin}", 1), model, []string{`no body "shin"`}},
		{"MJCF does not load", y, map[string]string{"hopper.xml": strings.Replace(x, "</worldbody>", "", 1)},
			[]string{"loading MuJoCo model", "hopper.xml", "XML_ERROR_MISMATCHED_ELEMENT"}},
		{"MJCF MuJoCo refuses", y, map[string]string{"hopper.xml": strings.Replace(x, `joint="foot_joint"`, `joint="ankle"`, 1)},
			[]string{"hopper.xml", "ankle"}},
		{"missing MJCF", y, nil, []string{"model hopper.xml", "no such file"}},
		{"bad type", strings.Replace(y, "frame_skip: 4", "frame_skip: four", 1), model, []string{"line 5", "four"}},
		{"no bound", strings.Replace(y, "{joint: rootz, above: 0.7}", "{joint: rootz}", 1), model, []string{"healthy[0]: no bound"}},
		{"bad slice", strings.Replace(y, `qpos: "2:"`, `qpos: "2:9"`, 1), model, []string{`"2:9" selects nothing of 6`}},
		{"bad termination", strings.Replace(y, "termination: # the episode ends when a condition fails\n  finite: true\n",
			"termination: never\nx:\n  finite: true\n", 1), model, []string{"termination"}},
		{"free joint component", strings.Replace(y, "joint: rootz", "joint: rootz, component: 1", 1), model,
			[]string{"component 1 of joint \"rootz\""}},
		{"preset", y + "preset: robot\n", model, []string{`preset "robot"`}},
	} {
		p := writeTask(t, c.yaml, c.files)
		_, err := LoadTaskFile(p)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range append(c.want, p) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", c.name, err, w)
			}
		}
	}
}

// TestTaskFileTerminationOutsideObservation: a healthy condition on a value
// the observation leaves out gives no observation rule (roll-outs then learn
// one), while the env applies it.
func TestTaskFileTerminationOutsideObservation(t *testing.T) {
	y, x := hopperFile(t)
	y = strings.Replace(y, "{joint: rootz, above: 0.7}", "{joint: rootx, below: 0.05}", 1)
	ft, err := LoadTaskFile(writeTask(t, y, map[string]string{"hopper.xml": x}))
	if err != nil {
		t.Fatal(err)
	}
	if ft.Done != nil {
		t.Fatal("a rule on rootx (left out of the observation) gave an observation rule")
	}
	e := mustMakeTask(t, ft)
	e.Reset(1)
	e.SetState([]float64{0.06, 1.25, 0, 0, 0, 0}, make([]float64, 6))
	st, err := e.Step(make([]float64, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Terminated {
		t.Error("rootx 0.06 > 0.05 did not terminate")
	}
}

func TestHopperLongExample(t *testing.T) {
	ft, err := LoadTaskFile("../examples/hopper-long/hopper_long.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ft.Name != "hopper-long" || ft.ObsDim != 11 || ft.ActDim != 3 || ft.Preset != "hopper" || ft.Done == nil {
		t.Fatalf("got %+v", *ft)
	}
	e := mustMakeTask(t, ft)
	if z := e.Reset(0)[0]; math.Abs(z-1.45) > 0.01 {
		t.Errorf("the longer hopper starts at z %v, want about 1.45", z)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		st, err := e.Step(randomAction(e, rng))
		if err != nil {
			t.Fatal(err)
		}
		if st.Terminated || st.Truncated {
			e.ResetNext()
		}
	}
}
