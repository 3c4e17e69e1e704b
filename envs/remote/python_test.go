package remote

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/pyserver"
)

// TestPythonPointMass plays admpo_env.examples.PointMass served by the
// Python server and checks every step against the dynamics computed here
// (v += 0.05 a, x += v, reward 1 - x² - 0.01 a², terminated at |x| > 2),
// the seeded reset (same seed, same start) and the spec.
func TestPythonPointMass(t *testing.T) {
	s := pyserver.Start(t, "admpo_env.examples:PointMass", nil)
	e, err := Make(s.Addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Task.ObsDim != 2 || e.Task.ActDim != 1 || e.MaxSteps() != 200 || e.ActionLow()[0] != -1 || e.ActionHigh()[0] != 1 {
		t.Fatalf("spec: obs %d act %d limit %d bounds %v %v", e.Task.ObsDim, e.Task.ActDim, e.MaxSteps(), e.ActionLow(), e.ActionHigh())
	}
	o1 := e.Reset(5)
	o2 := e.Reset(5)
	if o1 == nil || o1[0] != o2[0] || o1[1] != o2[1] || math.Abs(o1[0]) > 1.5 {
		t.Fatalf("seeded resets: %v %v (%v)", o1, o2, e.Err())
	}
	x, v := o2[0], o2[1]
	terminated := false
	for i := 0; i < 200 && !terminated; i++ {
		a := 0.3 * math.Sin(float64(i))
		if i%10 == 0 {
			a = 2 // clipped to 1 by the client
		}
		st, err := e.Step([]float64{a})
		if err != nil {
			t.Fatal(err)
		}
		a = math.Min(a, 1)
		v += 0.05 * a
		x += v
		if st.Obs[0] != x || st.Obs[1] != v || st.Reward != 1-x*x-0.01*a*a {
			t.Fatalf("step %d: got %v %v, want [%v %v] %v", i, st.Obs, st.Reward, x, v, 1-x*x-0.01*a*a)
		}
		if st.Terminated != (math.Abs(x) > 2) {
			t.Fatalf("step %d: terminated %v at x %v", i, st.Terminated, x)
		}
		terminated = st.Terminated
	}
	if !terminated {
		t.Fatal("the pushes never ended an episode: the test covers too little")
	}
}

// TestPythonFaults: NaN, a wrong shape, an exception in the env, a slow
// answer and a server killed mid-episode each give an error naming the
// address.
func TestPythonFaults(t *testing.T) {
	td, _ := filepath.Abs("testdata")
	for _, c := range []struct{ env, want string }{
		{"NaNObs", "observation[1] = NaN"},
		{"WrongShape", "3-value observation, the observation space has 2"},
		{"Raises", "RuntimeError: the robot fell off the table"},
		{"Slow", "did not answer step within 1s (--env-timeout)"},
		{"kill", "lost the environment server at"},
	} {
		t.Run(c.env, func(t *testing.T) {
			target := "pyfaults:" + c.env
			if c.env == "kill" {
				target = "admpo_env.examples:PointMass"
			}
			s := pyserver.Start(t, target, []string{td})
			timeout := 10 * time.Second // generous on a loaded machine
			if c.env == "Slow" {
				timeout = time.Second // the server sleeps 3s
			}
			e, err := Make(s.Addr, timeout)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if c.env == "kill" {
				if err := stepN(e, 2); err != nil {
					t.Fatal(err)
				}
				s.Kill()
				_, err = e.Step([]float64{0}) // mid-episode
			} else {
				err = stepN(e, 5)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), s.Addr) {
				t.Fatalf("got %v, want an error naming %s with %q", err, s.Addr, c.want)
			}
		})
	}
	s := pyserver.Start(t, "admpo_env.examples:PointMass", nil)
	s.Kill()
	if _, err := Make(s.Addr, time.Second); err == nil || !strings.Contains(err.Error(), "no environment server at "+s.Addr) {
		t.Fatalf("server down: %v", err)
	}
}

// TestPythonBatches: python3 -m admpo_env --copies 3 grants at most 3
// copies and plays batches as single connections play the same seeds and
// actions (checkBatches); without --copies it answers Copies as a server
// without batches (one copy, the connection goes on); a bad --copies is a
// usage error (exit 2).
func TestPythonBatches(t *testing.T) {
	s := pyserver.Start(t, "admpo_env.examples:PointMass", nil, "--copies", "3")
	checkBatches(t, s.Addr, 3)

	plain := pyserver.Start(t, "admpo_env.examples:PointMass", nil)
	c, err := Dial(plain.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if k, err := c.Copies(4); k != 1 || err != nil {
		t.Fatalf("Copies without --copies: %d %v, want 1", k, err)
	}
	if _, err := c.Reset(nil); err != nil {
		t.Fatalf("the connection after Copies: %v", err)
	}

	cmd := exec.Command(pyserver.Python, "-m", "admpo_env", "admpo_env.examples:PointMass", "--copies", "0")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(pyserver.Root(), "python"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--copies 0") {
		t.Fatalf("--copies 0: %v %q", err, out)
	}
}
