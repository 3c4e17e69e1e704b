package remote

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/admpo/admpo/envs"
)

// Env is an environment that Serve serves: the Gymnasium API with flat
// float64 vectors.
type Env interface {
	// Spec describes the environment; it must not change.
	Spec() Spec
	// Reset starts an episode; seed nil continues the env's own random
	// source.
	Reset(seed *int64) ([]float64, error)
	// Step applies one action.
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool, err error)
	// Close frees the env.
	Close() error
}

// Spec describes a served environment.
type Spec struct {
	Name            string
	ObsDim, ActDim  int
	Low, High       []float64 // action bounds (±Inf where unbounded)
	MaxEpisodeSteps int       // the env's own time limit (0: none; clients then cut at envs.MaxEpisodeSteps)
}

// Serve accepts connections on l and serves each, in its own goroutine,
// an env made by factory, until l is closed (then it returns nil, after
// the connections' envs are closed). An env's errors go to its client as
// error frames; a factory error ends that connection with one.
func Serve(l net.Listener, factory func() (Env, error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("remote: serve: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(c, factory)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// serveConn serves one connection until the client closes it, sends a
// close frame or breaks the protocol.
func serveConn(c net.Conn, factory func() (Env, error)) {
	defer c.Close()
	t, p, err := readFrame(c)
	if err != nil || t != msgHello {
		return
	}
	d := dec{b: p}
	if v := d.u32(); d.done() != nil || v != Version {
		writeFrame(c, msgError, []byte(fmt.Sprintf("protocol version %d: this server speaks %d", v, Version)))
		return
	}
	env, err := factory()
	if err != nil {
		writeFrame(c, msgError, []byte(err.Error()))
		return
	}
	defer env.Close()
	s := env.Spec()
	if len(s.Low) != s.ActDim || len(s.High) != s.ActDim {
		writeFrame(c, msgError, []byte(fmt.Sprintf("spec has %d/%d bounds for %d actions", len(s.Low), len(s.High), s.ActDim)))
		return
	}
	var e enc
	e.u32(Version)
	e.u32(uint32(s.ObsDim))
	e.u32(uint32(s.ActDim))
	e.u32(uint32(max(s.MaxEpisodeSteps, 0)))
	e.f64s(s.Low)
	e.f64s(s.High)
	e.u32(uint32(len(s.Name)))
	e.b = append(e.b, s.Name...)
	if writeFrame(c, msgSpec, e.b) != nil {
		return
	}
	for {
		t, p, err := readFrame(c)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				writeFrame(c, msgError, []byte(err.Error()))
			}
			return
		}
		typ, out, err := answer(env, t, p)
		if typ == msgClose {
			return
		}
		if err != nil {
			typ, out = msgError, []byte(err.Error())
		}
		if writeFrame(c, typ, out) != nil {
			return
		}
	}
}

// answer runs one request on env and returns the answer frame; msgClose
// ends the connection.
func answer(env Env, t byte, p []byte) (byte, []byte, error) {
	d := dec{b: p}
	var e enc
	switch t {
	case msgReset:
		has, seed := d.u8(), d.i64()
		if err := d.done(); err != nil {
			return 0, nil, fmt.Errorf("reset: %w", err)
		}
		var sp *int64
		if has != 0 {
			sp = &seed
		}
		obs, err := env.Reset(sp)
		if err != nil {
			return 0, nil, fmt.Errorf("reset: %w", err)
		}
		e.vec(obs)
		return msgObs, e.b, nil
	case msgStep:
		act := d.vec()
		if err := d.done(); err != nil {
			return 0, nil, fmt.Errorf("step: %w", err)
		}
		obs, r, term, trunc, err := env.Step(act)
		if err != nil {
			return 0, nil, fmt.Errorf("step: %w", err)
		}
		e.f64(r)
		var flags uint8
		if term {
			flags |= 1
		}
		if trunc {
			flags |= 2
		}
		e.u8(flags)
		e.vec(obs)
		return msgStepR, e.b, nil
	case msgClose:
		return msgClose, nil, nil
	}
	return 0, nil, fmt.Errorf("unknown request type 0x%02x", t)
}

// Builtin returns a factory of the built-in task name (envs.Make), to
// serve it with Serve.
func Builtin(name string) func() (Env, error) {
	return func() (Env, error) {
		e, err := envs.Make(name)
		if err != nil {
			return nil, err
		}
		return builtin{e}, nil
	}
}

// Task returns a factory of task t's envs (envs.MakeTask): a built-in
// task or one read from a task file (envs.LoadTaskFile), to serve it with
// Serve.
func Task(t *envs.Task) func() (Env, error) {
	return func() (Env, error) {
		e, err := envs.MakeTask(t)
		if err != nil {
			return nil, err
		}
		return builtin{e}, nil
	}
}

// builtin is a MuJoCo task (built-in or a task file's) as an Env.
type builtin struct{ e *envs.Env }

func (b builtin) Spec() Spec {
	return Spec{Name: b.e.Task.Name, ObsDim: b.e.Task.ObsDim, ActDim: b.e.Task.ActDim,
		Low: b.e.ActionLow(), High: b.e.ActionHigh(), MaxEpisodeSteps: b.e.MaxSteps()}
}

func (b builtin) Reset(seed *int64) ([]float64, error) {
	if seed != nil {
		b.e.Seed(*seed)
	}
	obs := b.e.ResetNext()
	if obs == nil {
		return nil, b.e.Err()
	}
	return obs, nil
}

func (b builtin) Step(a []float64) ([]float64, float64, bool, bool, error) {
	st, err := b.e.Step(a)
	return st.Obs, st.Reward, st.Terminated, st.Truncated, err
}

func (b builtin) Close() error {
	b.e.Close()
	return nil
}

// Listen listens on addr (tcp://HOST:PORT or unix:///PATH; a stale socket
// file at PATH is not removed).
func Listen(addr string) (net.Listener, error) {
	network, a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen(network, a)
	if err != nil {
		return nil, fmt.Errorf("remote: listen on %s: %w", addr, err)
	}
	return l, nil
}
