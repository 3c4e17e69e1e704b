package remote

import (
	"math"
	"math/rand"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/envs"
)

// serve starts Serve on a fresh Unix socket (or TCP port) and returns its
// address and listener; the test's cleanup closes it.
func serve(t testing.TB, network string, factory func() (Env, error)) (string, net.Listener) {
	t.Helper()
	addr := "tcp://127.0.0.1:0"
	if network == "unix" {
		addr = "unix://" + filepath.Join(t.TempDir(), "env.sock")
	}
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if network == "tcp" {
		addr = "tcp://" + l.Addr().String()
	}
	done := make(chan error, 1)
	go func() { done <- Serve(l, factory) }()
	t.Cleanup(func() {
		l.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return addr, l
}

// TestBuiltinOverTheWire plays the built-in hopper served by Serve and the
// in-process hopper with the same seeds and actions: every observation,
// reward and flag must be bit for bit the same, across episode ends.
func TestBuiltinOverTheWire(t *testing.T) {
	addr, _ := serve(t, "unix", Builtin("hopper"))
	re, err := Make(addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	le, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer le.Close()
	if re.Task.ObsDim != 11 || re.Task.ActDim != 3 || re.MaxSteps() != envs.MaxEpisodeSteps {
		t.Fatalf("remote hopper: obs %d act %d limit %d", re.Task.ObsDim, re.Task.ActDim, re.MaxSteps())
	}
	for i, v := range le.ActionLow() {
		if re.ActionLow()[i] != v || re.ActionHigh()[i] != le.ActionHigh()[i] {
			t.Fatalf("bounds differ: %v %v vs %v %v", re.ActionLow(), re.ActionHigh(), le.ActionLow(), le.ActionHigh())
		}
	}
	rng := rand.New(rand.NewSource(3))
	act := make([]float64, 3)
	same := func(what string, a, b []float64) {
		t.Helper()
		if len(a) != len(b) {
			t.Fatalf("%s: %d vs %d values", what, len(a), len(b))
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("%s: value %d: remote %v, in-process %v", what, i, a[i], b[i])
			}
		}
	}
	same("reset", re.Reset(7), le.Reset(7))
	ends := 0
	for step := 0; step < 400; step++ {
		for j := range act {
			act[j] = 2*rng.Float64() - 1 // beyond the bounds too: both clip
		}
		rs, err := re.Step(act)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := le.Step(act)
		if err != nil {
			t.Fatal(err)
		}
		same("step", rs.Obs, ls.Obs)
		if rs.Reward != ls.Reward || rs.Terminated != ls.Terminated || rs.Truncated != ls.Truncated {
			t.Fatalf("step %d: remote %v %v %v, in-process %v %v %v", step, rs.Reward, rs.Terminated, rs.Truncated, ls.Reward, ls.Terminated, ls.Truncated)
		}
		if rs.Terminated || rs.Truncated {
			ends++
			same("reset next", re.ResetNext(), le.ResetNext()) // the env's own source, not reseeded
		}
	}
	if ends < 2 {
		t.Fatalf("only %d episode ends in 400 random steps: the test covers too little", ends)
	}
}

// toy is a 1-D point mass for the fault tests: obs (x, v), action in
// [-1, 1], terminated when |x| > 1; fault picks a misbehaviour.
type toy struct {
	x, v  float64
	fault string // "", "nan", "shape", "slow", "error"
	steps int
}

func (e *toy) Spec() Spec {
	return Spec{Name: "toy", ObsDim: 2, ActDim: 1, Low: []float64{-1}, High: []float64{1}, MaxEpisodeSteps: 50}
}

func (e *toy) Reset(seed *int64) ([]float64, error) {
	e.x, e.v, e.steps = 0, 0, 0
	if seed != nil {
		e.x = float64(*seed%7) / 10
	}
	return []float64{e.x, e.v}, nil
}

func (e *toy) Step(a []float64) ([]float64, float64, bool, bool, error) {
	e.steps++
	e.v += 0.1 * a[0]
	e.x += e.v
	obs := []float64{e.x, e.v}
	if e.steps == 3 {
		switch e.fault {
		case "nan":
			obs[1] = math.NaN()
		case "shape":
			obs = append(obs, 0)
		case "slow":
			time.Sleep(2 * time.Second)
		case "error":
			return nil, 0, false, false, errString("the robot fell off the table")
		}
	}
	return obs, -e.x * e.x, math.Abs(e.x) > 1, false, nil
}

func (e *toy) Close() error { return nil }

type errString string

func (e errString) Error() string { return string(e) }

func toyFactory(fault string) func() (Env, error) {
	return func() (Env, error) { return &toy{fault: fault}, nil }
}

// stepN resets e and takes n steps of +1 (until the first error).
func stepN(e *envs.Env, n int) error {
	if e.Reset(1) == nil {
		return e.Err()
	}
	for i := 0; i < n; i++ {
		if _, err := e.Step([]float64{1}); err != nil {
			return err
		}
	}
	return nil
}

func TestFaults(t *testing.T) {
	for _, c := range []struct{ fault, want string }{
		{"nan", "observation[1] = NaN"},
		{"shape", "3-value observation, the observation space has 2"},
		{"error", "the robot fell off the table"},
		{"slow", "did not answer step within 300ms (--env-timeout)"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			addr, _ := serve(t, "tcp", toyFactory(c.fault))
			e, err := Make(addr, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			err = stepN(e, 5)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("got %v, want an error naming %s with %q", err, addr, c.want)
			}
		})
	}
}

func TestDownAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + l.Addr().String()
	l.Close()
	_, err = Make(addr, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no environment server at "+addr) {
		t.Fatalf("got %v", err)
	}
	for _, bad := range []string{"tcp://nohost", "unix://", "http://x:1"} {
		if _, err := Make(bad, time.Second); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestServerDies closes the server mid-episode: the next step fails naming
// the address, and so does every later call.
func TestServerDies(t *testing.T) {
	l, err := Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + l.Addr().String()
	done := make(chan error, 1)
	go func() { done <- Serve(l, toyFactory("")) }()
	e, err := Make(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := stepN(e, 2); err != nil {
		t.Fatal(err)
	}
	l.Close() // Serve closes its connections as it returns
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, err = e.Step([]float64{1})
	if err == nil || !strings.Contains(err.Error(), "lost the environment server at "+addr) {
		t.Fatalf("got %v", err)
	}
	if e.Reset(2) != nil || !strings.Contains(e.Err().Error(), addr) {
		t.Fatalf("reset after the loss: %v", e.Err())
	}
}

// TestEpisodeLimit: the client truncates at the spec's limit; terminations
// pass through.
func TestEpisodeLimit(t *testing.T) {
	addr, _ := serve(t, "unix", toyFactory(""))
	e, err := Make(addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.Reset(0)
	n := 0
	for {
		st, err := e.Step([]float64{0})
		if err != nil {
			t.Fatal(err)
		}
		n++
		if st.Terminated {
			t.Fatal("terminated at rest")
		}
		if st.Truncated {
			break
		}
	}
	if n != 50 {
		t.Fatalf("truncated after %d steps, want the spec's 50", n)
	}
	if _, err := e.Step([]float64{0}); err == nil {
		t.Fatal("step after the episode ended: no error")
	}
	e.Reset(0)
	for n = 1; ; n++ {
		st, err := e.Step([]float64{1})
		if err != nil {
			t.Fatal(err)
		}
		if st.Terminated {
			break
		}
	}
	if n != 5 { // x = 0.1, 0.3, 0.6, 1.0, 1.5
		t.Fatalf("terminated after %d steps, want 5", n)
	}
}

// BenchmarkTrivial measures steps per second of the toy env over a Unix
// socket and over TCP on the loopback interface.
func BenchmarkTrivial(b *testing.B) {
	for _, network := range []string{"unix", "tcp"} {
		b.Run(network, func(b *testing.B) {
			addr, _ := serve(b, network, func() (Env, error) { return &toy{}, nil })
			e, err := Make(addr, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			e.Reset(0)
			a := []float64{0}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := e.Step(a)
				if err != nil {
					b.Fatal(err)
				}
				if st.Terminated || st.Truncated {
					e.ResetNext()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
