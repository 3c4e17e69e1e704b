package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
)

// hopperLong copies the hopper-long example (a modified built-in robot:
// hopper with a longer leg, examples/hopper-long) into a temporary
// directory and returns its task file's path.
func hopperLong(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"hopper_long.yaml", "hopper_long.xml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "hopper-long", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "hopper_long.yaml")
}

// taskFileConfig is tinyConfig on the task file at path.
func taskFileConfig(t *testing.T, algo, path, termination string) OnlineConfig {
	t.Helper()
	task, err := envs.LoadTaskFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := tinyConfig(algo)
	c.Env, c.EnvFile, c.EnvDigest, c.Termination = task.Name, task.File, task.Digest, termination
	return c
}

// TestTaskFileRunResumesExactly trains ADMPO-ON a few hundred steps on the
// hopper-long task file, with the task file's termination rule and with a
// learned one, straight through and killed after a checkpoint and resumed:
// the runs must be identical, and the run's config records the file.
func TestTaskFileRunResumesExactly(t *testing.T) {
	path := hopperLong(t)
	for _, term := range []string{"task", "learned"} {
		t.Run(term, func(t *testing.T) {
			cfg := taskFileConfig(t, "admpo", path, term)
			want := straightRun(t, cfg)
			c, dir := resumedToEnd(t, NewOnline, ResumeOnline, cfg, 450, 300)
			sameRun(t, capture(c), want)
			if c.task.Name != "hopper-long" || c.env.Task.File != path || c.model == nil || c.model.Len() == 0 {
				t.Fatalf("task %s file %s, model buffer %v", c.task.Name, c.env.Task.File, c.model)
			}
			run, err := OpenRunDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Online.EnvFile != path || run.Online.EnvDigest != cfg.EnvDigest || run.Online.Termination != term {
				t.Fatalf("config.json records %+v", run.Online)
			}
			// The export takes the task file's action bounds and records it.
			b, _, err := ExportBundle(dir, 50)
			if err != nil {
				t.Fatal(err)
			}
			m := b.Manifest
			if m.Task != "hopper-long" || m.Provenance["env_file"] != path || m.Provenance["env_file_sha256"] != cfg.EnvDigest ||
				fmt.Sprint(m.ActLow, m.ActHigh) != "[-1 -1 -1] [1 1 1]" {
				t.Fatalf("manifest %+v", m)
			}
			if term == "learned" { // the last run: a changed task file is refused by the export
				b, _ := os.ReadFile(path)
				if err := os.WriteFile(path, append(b, "# changed\n"...), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, _, err := ExportBundle(dir, 10); err == nil || !strings.Contains(err.Error(), "changed since") {
					t.Fatalf("export after the task file changed: %v", err)
				}
			}
		})
	}
}

// TestTaskFileTermination: the task file's rule serves roll-outs as the
// built-in task's does; none never terminates; a learned rule without a
// terminal seen never terminates, and with terminals fires on a fallen
// hopper.
func TestTaskFileTermination(t *testing.T) {
	path := hopperLong(t)
	fallen := []float32{0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	up := []float32{1.4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, c := range []struct {
		term           string
		fallen, upDone bool
	}{{"task", true, false}, {"none", false, false}, {"learned", true, false}} {
		cfg := taskFileConfig(t, "admpo", path, c.term)
		o, err := newOnline(cfg, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.obs = envs.Float32(o.env.Reset(0))
		if c.term == "learned" {
			if _, err := o.learnTermination(); err != nil { // the buffer holds no terminal yet
				t.Fatal(err)
			}
			if o.task.Done(fallen) {
				t.Error("learned: no terminal seen, but a fallen hopper terminates")
			}
			o.Cfg.WarmUp = 1 << 30 // random actions: the hopper falls often
			for o.step < 400 {
				if err := o.envStep(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := o.learnTermination(); err != nil {
				t.Fatal(err)
			}
		}
		if o.task.Done(fallen) != c.fallen || o.task.Done(up) != c.upDone {
			t.Errorf("%s: Done(fallen) %v, Done(upright) %v", c.term, o.task.Done(fallen), o.task.Done(up))
		}
		if o.env.Task.Done == nil || !o.env.Task.Done(fallen) {
			t.Errorf("%s: the env's task lost its own rule", c.term)
		}
		o.Close()
	}
}

// TestTaskFileChangedRefusesResume: a run on a task file whose content (or
// model) changed since it started does not resume, and says why.
func TestTaskFileChangedRefusesResume(t *testing.T) {
	path := hopperLong(t)
	cfg := taskFileConfig(t, "sac", path, "task")
	dir := filepath.Join(t.TempDir(), "run")
	killed(t, NewOnline, cfg, dir, 310)
	xml := filepath.Join(filepath.Dir(path), "hopper_long.xml")
	b, _ := os.ReadFile(xml)
	if err := os.WriteFile(xml, []byte(strings.Replace(string(b), `size="0.04 0.35"`, `size="0.04 0.36"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ResumeOnline(dir)
	if err == nil || !strings.Contains(err.Error(), "changed since the run started") || !strings.Contains(err.Error(), path) {
		t.Fatalf("resume after the model changed: %v", err)
	}
	os.WriteFile(xml, b, 0o644)
	o, err := ResumeOnline(dir)
	if err != nil {
		t.Fatalf("resume with the file restored: %v", err)
	}
	o.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := ResumeOnline(dir); err == nil || !strings.Contains(err.Error(), "task file") {
		t.Fatalf("resume without the task file: %v", err)
	}
}

// TestTaskFileWithoutObservationRule: the task rule is refused where the
// observation cannot apply it.
func TestTaskFileWithoutObservationRule(t *testing.T) {
	path := hopperLong(t)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), "{joint: rootz, above: 0.9}", "{joint: rootx, below: 50}", 1)), 0o644)
	cfg := taskFileConfig(t, "admpo", path, "task")
	if _, err := newOnline(cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "use termination learned or none") {
		t.Fatalf("task rule without an observation rule: %v", err)
	}
	cfg.Termination = "learned"
	o, err := newOnline(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
}
