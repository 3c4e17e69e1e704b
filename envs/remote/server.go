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
// error frames; a factory error ends that connection with one. It offers
// no batches of env copies (ServeCopies does).
func Serve(l net.Listener, factory func() (Env, error)) error {
	return ServeCopies(l, factory, 1)
}

// ServeCopies is Serve offering each connection up to copies env copies
// (made by factory) for batched requests (docs/remote-envs.md); with
// copies < 2 it answers a request for copies with an error frame, as a
// server without batches does.
func ServeCopies(l net.Listener, factory func() (Env, error), copies int) error {
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
			serveConn(c, factory, copies)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// served is one connection's envs: the env of its HELLO (copy 0) and the
// copies a COPIES request added.
type served struct {
	envs      []Env
	spec      Spec
	factory   func() (Env, error)
	maxCopies int
}

func (s *served) close() {
	for _, e := range s.envs {
		e.Close()
	}
}

// serveConn serves one connection until the client closes it, sends a
// close frame or breaks the protocol.
func serveConn(c net.Conn, factory func() (Env, error), maxCopies int) {
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
	sv := &served{envs: []Env{env}, spec: env.Spec(), factory: factory, maxCopies: maxCopies}
	defer sv.close()
	s := sv.spec
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
		typ, out, err := sv.answer(t, p)
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

// answer runs one request on the connection's envs and returns the answer
// frame; msgClose ends the connection.
func (sv *served) answer(t byte, p []byte) (byte, []byte, error) {
	env := sv.envs[0]
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
		e.u8(stepFlags(term, trunc))
		e.vec(obs)
		return msgStepR, e.b, nil
	case msgClose:
		return msgClose, nil, nil
	}
	if sv.maxCopies >= 2 {
		switch t {
		case msgCopies:
			return sv.copies(&d)
		case msgResetBatch:
			return sv.resetBatch(&d)
		case msgStepBatch:
			return sv.stepBatch(&d)
		}
	}
	return 0, nil, fmt.Errorf("unknown request type 0x%02x", t)
}

func stepFlags(term, trunc bool) uint8 {
	var flags uint8
	if term {
		flags |= 1
	}
	if trunc {
		flags |= 2
	}
	return flags
}

// copies answers COPIES: the connection gets min(n, maxCopies) envs, the
// first being the one it had. It may be asked once.
func (sv *served) copies(d *dec) (byte, []byte, error) {
	n := int(d.u32())
	if err := d.done(); err != nil {
		return 0, nil, fmt.Errorf("copies: %w", err)
	}
	if n < 1 || n > MaxCopies {
		return 0, nil, fmt.Errorf("copies: %d copies asked for (want 1 to %d)", n, MaxCopies)
	}
	if len(sv.envs) > 1 {
		return 0, nil, fmt.Errorf("copies: this connection holds %d copies already", len(sv.envs))
	}
	for len(sv.envs) < min(n, sv.maxCopies) {
		env, err := sv.factory()
		if err != nil {
			return 0, nil, fmt.Errorf("copies: making copy %d: %w", len(sv.envs), err)
		}
		if s := env.Spec(); s.ObsDim != sv.spec.ObsDim || s.ActDim != sv.spec.ActDim {
			env.Close()
			return 0, nil, fmt.Errorf("copies: copy %d has %d observation and %d action values, copy 0 %d and %d",
				len(sv.envs), s.ObsDim, s.ActDim, sv.spec.ObsDim, sv.spec.ActDim)
		}
		sv.envs = append(sv.envs, env)
	}
	var e enc
	e.u32(uint32(len(sv.envs)))
	return msgCopiesR, e.b, nil
}

// batchCopies reads n copy indices, each below the connection's copies
// and given once.
func (sv *served) batchCopies(n int, next func() int) ([]int, error) {
	if n < 1 || n > len(sv.envs) {
		return nil, fmt.Errorf("a batch of %d for %d copies", n, len(sv.envs))
	}
	seen := make([]bool, len(sv.envs))
	idx := make([]int, n)
	for i := range idx {
		k := next()
		if k < 0 || k >= len(sv.envs) || seen[k] {
			return nil, fmt.Errorf("copy %d (of %d) out of range or given twice", k, len(sv.envs))
		}
		seen[k], idx[i] = true, k
	}
	return idx, nil
}

// checkObs refuses an observation of another size than the spec's (the
// frame carries one size for all).
func (sv *served) checkObs(obs []float64, copy int, what string) error {
	if len(obs) != sv.spec.ObsDim {
		return fmt.Errorf("%s: copy %d gave %d observation values, the spec says %d", what, copy, len(obs), sv.spec.ObsDim)
	}
	return nil
}

func (sv *served) resetBatch(d *dec) (byte, []byte, error) {
	n := int(d.u32())
	seeds := make([]*int64, 0, n)
	idx, err := sv.batchCopies(n, func() int {
		k := int(d.u32())
		has, seed := d.u8(), d.i64()
		if has != 0 {
			seeds = append(seeds, &seed)
		} else {
			seeds = append(seeds, nil)
		}
		return k
	})
	if err == nil {
		err = d.done()
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reset batch: %w", err)
	}
	var e enc
	e.u32(uint32(n))
	e.u32(uint32(sv.spec.ObsDim))
	for i, k := range idx {
		obs, err := sv.envs[k].Reset(seeds[i])
		if err == nil {
			err = sv.checkObs(obs, k, "reset")
		}
		if err != nil {
			return 0, nil, fmt.Errorf("reset batch: copy %d: %w", k, err)
		}
		e.f64s(obs)
	}
	return msgObsBatch, e.b, nil
}

func (sv *served) stepBatch(d *dec) (byte, []byte, error) {
	n, ad := int(d.u32()), int(d.u32())
	if d.err == nil && ad != sv.spec.ActDim {
		return 0, nil, fmt.Errorf("step batch: %d action values per copy, the spec says %d", ad, sv.spec.ActDim)
	}
	idx, err := sv.batchCopies(n, func() int { return int(d.u32()) })
	var acts []float64
	if err == nil {
		acts = d.f64s(n * ad)
		err = d.done()
	}
	if err != nil {
		return 0, nil, fmt.Errorf("step batch: %w", err)
	}
	var head, obs enc
	head.u32(uint32(n))
	head.u32(uint32(sv.spec.ObsDim))
	for i, k := range idx {
		o, r, term, trunc, err := sv.envs[k].Step(acts[i*ad : (i+1)*ad])
		if err == nil {
			err = sv.checkObs(o, k, "step")
		}
		if err != nil {
			return 0, nil, fmt.Errorf("step batch: copy %d: %w", k, err)
		}
		head.f64(r)
		head.u8(stepFlags(term, trunc))
		obs.f64s(o)
	}
	return msgStepBatchR, append(head.b, obs.b...), nil
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
