package train

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/rundir"
)

// slowSteps is an env whose steps each take *delay before answering.
type slowSteps struct {
	remote.Env
	delay *atomic.Int64
}

func (s slowSteps) Step(a []float64) ([]float64, float64, bool, bool, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.Env.Step(a)
}

// TestRemoteResumeEnvTimeout: a resumed remote run keeps the timeout its
// config records unless it is given a new one; a new one is written to
// config.json at once, is the one the run waits (a server that answers a
// step in 6 s stops a run given 1.5 s, long before the recorded 30 s; the
// 1.5 s leave the unslowed reset time on a loaded machine), and is kept
// by the checkpoint that failure writes, so a later plain resume keeps it. A
// run on a built-in task refuses a timeout with ErrNotRemote.
func TestRemoteResumeEnvTimeout(t *testing.T) {
	var delay atomic.Int64
	base := remote.Builtin("hopper")
	addr, _ := goServer(t, filepath.Join(t.TempDir(), "hopper.sock"), func() (remote.Env, error) {
		e, err := base()
		return slowSteps{Env: e, delay: &delay}, err
	})
	cfg := tinyConfig("sac")
	cfg.Env, cfg.Remote = addr, &RemoteEnv{TimeoutS: 30}
	dir := filepath.Join(t.TempDir(), "run")
	killed(t, NewOnline, cfg, dir, 300) // checkpoint at 300
	recorded := func() float64 {
		t.Helper()
		c := readOnlineConfig(t, dir)
		if c.Remote == nil {
			t.Fatal("config.json has no remote record")
		}
		return c.Remote.TimeoutS
	}
	if got := recorded(); got != 30 {
		t.Fatalf("config.json records timeout %v s, want 30", got)
	}

	delay.Store(int64(6 * time.Second))
	o, err := ResumeOnlineWith(dir, ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Cfg.Remote.TimeoutS != 30 {
		t.Errorf("a plain resume has timeout %v s, want the recorded 30", o.Cfg.Remote.TimeoutS)
	}
	o.Close()

	o, err = ResumeOnlineWith(dir, ResumeOptions{EnvTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if o.Cfg.Remote.TimeoutS != 1.5 || recorded() != 1.5 {
		t.Errorf("resume with 1.5 s: run %v s, config.json %v s", o.Cfg.Remote.TimeoutS, recorded())
	}
	start := time.Now()
	err = o.Run(context.Background())
	took := time.Since(start)
	o.Close()
	if err == nil || !strings.Contains(err.Error(), "environment server "+addr+" failed at env step 300") {
		t.Fatalf("a 6 s answer against a 1.5 s timeout: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("the run waited %s for a 6 s answer: the 1.5 s timeout was not used", took)
	}

	delay.Store(0)
	o, err = ResumeOnlineWith(dir, ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Cfg.Remote.TimeoutS != 1.5 {
		t.Errorf("after the failure, a plain resume has timeout %v s, want the 1.5 its checkpoint recorded", o.Cfg.Remote.TimeoutS)
	}
	o.Close()
	o, err = ResumeOnlineWith(dir, ResumeOptions{EnvTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := recorded(); got != 20 {
		t.Errorf("config.json after the finished run records %v s, want 20", got)
	}

	local := tinyConfig("sac")
	ldir := filepath.Join(t.TempDir(), "local")
	killed(t, NewOnline, local, ldir, 300)
	if _, err := ResumeOnlineWith(ldir, ResumeOptions{EnvTimeout: time.Second}); !errors.Is(err, ErrNotRemote) {
		t.Fatalf("a built-in task's run resumed with an env timeout: %v, want ErrNotRemote", err)
	}
	if c := readOnlineConfig(t, ldir); c.Remote != nil {
		t.Fatalf("the refused resume changed config.json: %+v", c.Remote)
	}
}

// readOnlineConfig reads the config.json of the online run in dir.
func readOnlineConfig(t *testing.T, dir string) OnlineConfig {
	t.Helper()
	b, err := os.ReadFile(rundir.Dir(dir).Config())
	if err != nil {
		t.Fatal(err)
	}
	var c OnlineConfig
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
