package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/admpo/admpo/envs"
)

// DefaultTimeout is how long the client waits for a connection or an
// answer when it is given no timeout.
const DefaultTimeout = 30 * time.Second

// IsAddress reports whether name is a remote environment's address
// (tcp://HOST:PORT or unix:///PATH) rather than a built-in task's name.
func IsAddress(name string) bool {
	return strings.HasPrefix(name, "tcp://") || strings.HasPrefix(name, "unix://")
}

// ParseAddress splits an address into the network and address net.Dial
// takes.
func ParseAddress(addr string) (network, address string, err error) {
	switch {
	case strings.HasPrefix(addr, "tcp://"):
		a := strings.TrimPrefix(addr, "tcp://")
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", "", fmt.Errorf("remote: %s: want tcp://HOST:PORT: %w", addr, err)
		}
		return "tcp", a, nil
	case strings.HasPrefix(addr, "unix://"):
		p := strings.TrimPrefix(addr, "unix://")
		if p == "" {
			return "", "", fmt.Errorf("remote: %s: want unix:///PATH", addr)
		}
		return "unix", p, nil
	}
	return "", "", fmt.Errorf("remote: %q is not an address (want tcp://HOST:PORT or unix:///PATH)", addr)
}

// Client is one connection to an environment server, which serves it one
// environment instance. It implements envs.Backend. Not safe for
// concurrent use.
type Client struct {
	Addr    string
	Spec    envs.BackendSpec // as the server announced it (Name is Addr)
	EnvName string           // the server's name for its environment
	timeout time.Duration
	conn    net.Conn
	broken  error // set once the connection can no longer be used
	copies  int   // the env copies Copies obtained (0: not asked)
}

// Dial connects to the environment server at addr and reads its spec.
// timeout (0: DefaultTimeout) bounds the connection and every request.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	network, a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	conn, err := net.DialTimeout(network, a, timeout)
	if err != nil {
		return nil, fmt.Errorf("remote: no environment server at %s (is it running?): %w", addr, err)
	}
	c := &Client{Addr: addr, timeout: timeout, conn: conn}
	var e enc
	e.u32(Version)
	p, err := c.call(msgHello, e.b, msgSpec, "hello")
	if err != nil {
		conn.Close()
		return nil, err
	}
	d := dec{b: p}
	ver := d.u32()
	od, ad, maxSteps := int(d.u32()), int(d.u32()), int(d.u32())
	low := d.f64s(ad)
	high := d.f64s(ad)
	name := string(d.take(int(d.u32())))
	if err := d.done(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("remote: %s: malformed spec: %w", addr, err)
	}
	if ver != Version {
		conn.Close()
		return nil, fmt.Errorf("remote: %s speaks protocol version %d, admpo %d", addr, ver, Version)
	}
	if od <= 0 || ad <= 0 {
		conn.Close()
		return nil, fmt.Errorf("remote: %s announces %d observation and %d action values (want > 0)", addr, od, ad)
	}
	c.EnvName = name
	c.Spec = envs.BackendSpec{Name: addr, ObsDim: od, ActDim: ad, Low: low, High: high, MaxEpisodeSteps: maxSteps}
	return c, nil
}

// call sends one request and reads its answer, which must be of type want
// (or an error frame).
func (c *Client) call(typ byte, payload []byte, want byte, what string) ([]byte, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, c.fail(what, err)
	}
	if err := writeFrame(c.conn, typ, payload); err != nil {
		return nil, c.fail(what, err)
	}
	t, p, err := readFrame(c.conn)
	if err != nil {
		return nil, c.fail(what, err)
	}
	switch t {
	case want:
		return p, nil
	case msgError:
		return nil, fmt.Errorf("remote: %s: the environment failed in %s: %s", c.Addr, what, p)
	}
	return nil, c.fail(what, fmt.Errorf("answer of type 0x%02x, want 0x%02x", t, want))
}

// fail marks the connection broken (a request's answer may be half read)
// and returns the error that every later call returns too.
func (c *Client) fail(what string, err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded):
		c.broken = fmt.Errorf("remote: %s did not answer %s within %v (--env-timeout): %w", c.Addr, what, c.timeout, err)
	default:
		c.broken = fmt.Errorf("remote: lost the environment server at %s in %s: %w", c.Addr, what, err)
	}
	c.conn.Close()
	return c.broken
}

// Reset starts an episode (seed nil: the server's env continues its own
// random source).
func (c *Client) Reset(seed *int64) ([]float64, error) {
	var e enc
	if seed != nil {
		e.u8(1)
		e.i64(*seed)
	} else {
		e.u8(0)
		e.i64(0)
	}
	p, err := c.call(msgReset, e.b, msgObs, "reset")
	if err != nil {
		return nil, err
	}
	d := dec{b: p}
	obs := d.vec()
	if err := d.done(); err != nil {
		return nil, c.fail("reset", fmt.Errorf("malformed observation: %w", err))
	}
	return obs, nil
}

// Step applies action.
func (c *Client) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool, err error) {
	var e enc
	e.vec(action)
	p, err := c.call(msgStep, e.b, msgStepR, "step")
	if err != nil {
		return nil, 0, false, false, err
	}
	d := dec{b: p}
	reward = d.f64()
	flags := d.u8()
	obs = d.vec()
	if err := d.done(); err != nil {
		return nil, 0, false, false, c.fail("step", fmt.Errorf("malformed step: %w", err))
	}
	return obs, reward, flags&1 != 0, flags&2 != 0, nil
}

// Copies asks the server for n env copies on this connection, for
// ResetBatch and StepBatch, and returns how many the connection holds:
// copy 0 is the env Reset and Step play, the others are new and need a
// reset. A server without batches answers with an error frame: Copies then
// returns 1 and the connection goes on as before. It may be called once.
func (c *Client) Copies(n int) (int, error) {
	if n < 1 || n > MaxCopies {
		return 0, fmt.Errorf("remote: %s: %d copies asked for (want 1 to %d)", c.Addr, n, MaxCopies)
	}
	if c.copies != 0 {
		return 0, fmt.Errorf("remote: %s: copies asked for twice on one connection", c.Addr)
	}
	var e enc
	e.u32(uint32(n))
	p, err := c.call(msgCopies, e.b, msgCopiesR, "copies")
	if err != nil {
		if c.broken != nil {
			return 0, err
		}
		c.copies = 1
		return 1, nil // an error frame: no batches
	}
	d := dec{b: p}
	k := int(d.u32())
	if err := d.done(); err != nil || k < 1 || k > n {
		return 0, c.fail("copies", fmt.Errorf("granted %d copies of %d asked for (%v)", k, n, err))
	}
	c.copies = k
	return k, nil
}

// BatchStep is one copy's answer to StepBatch.
type BatchStep struct {
	Obs                   []float64
	Reward                float64
	Terminated, Truncated bool
}

// checkCopies checks a batch's copy indices: distinct, below Copies'.
func (c *Client) checkCopies(copies []int) error {
	if len(copies) == 0 || len(copies) > max(c.copies, 1) {
		return fmt.Errorf("remote: %s: a batch of %d for %d copies", c.Addr, len(copies), max(c.copies, 1))
	}
	seen := map[int]bool{}
	for _, k := range copies {
		if k < 0 || k >= max(c.copies, 1) || seen[k] {
			return fmt.Errorf("remote: %s: copy %d out of range (%d copies) or given twice", c.Addr, k, max(c.copies, 1))
		}
		seen[k] = true
	}
	return nil
}

// readObsRows reads n observations of the spec's size (the answer's
// obs_dim must be it) from d.
func (c *Client) readObsRows(d *dec, n int, what string) ([][]float64, error) {
	od := int(d.u32())
	if d.err == nil && od != c.Spec.ObsDim {
		return nil, c.fail(what, fmt.Errorf("observations of %d values, the spec says %d", od, c.Spec.ObsDim))
	}
	flat := d.f64s(n * c.Spec.ObsDim)
	rows := make([][]float64, n)
	for i := range rows {
		if flat != nil {
			rows[i] = flat[i*od : (i+1)*od : (i+1)*od]
		}
	}
	return rows, nil
}

// ResetBatch resets the given copies in one request, copy copies[i] with
// seeds[i] (nil: its own random source), and returns their observations
// in that order.
func (c *Client) ResetBatch(copies []int, seeds []*int64) ([][]float64, error) {
	if err := c.checkCopies(copies); err != nil {
		return nil, err
	}
	if len(seeds) != len(copies) {
		return nil, fmt.Errorf("remote: %s: %d seeds for %d copies", c.Addr, len(seeds), len(copies))
	}
	var e enc
	e.u32(uint32(len(copies)))
	for i, k := range copies {
		e.u32(uint32(k))
		if seeds[i] != nil {
			e.u8(1)
			e.i64(*seeds[i])
		} else {
			e.u8(0)
			e.i64(0)
		}
	}
	p, err := c.call(msgResetBatch, e.b, msgObsBatch, "reset batch")
	if err != nil {
		return nil, err
	}
	d := dec{b: p}
	n := int(d.u32())
	if d.err == nil && n != len(copies) {
		return nil, c.fail("reset batch", fmt.Errorf("%d observations for %d copies", n, len(copies)))
	}
	obs, err := c.readObsRows(&d, len(copies), "reset batch")
	if err != nil {
		return nil, err
	}
	if err := d.done(); err != nil {
		return nil, c.fail("reset batch", fmt.Errorf("malformed observations: %w", err))
	}
	return obs, nil
}

// StepBatch applies actions[i] to copy copies[i], all in one request.
func (c *Client) StepBatch(copies []int, actions [][]float64) ([]BatchStep, error) {
	if err := c.checkCopies(copies); err != nil {
		return nil, err
	}
	if len(actions) != len(copies) {
		return nil, fmt.Errorf("remote: %s: %d actions for %d copies", c.Addr, len(actions), len(copies))
	}
	ad := c.Spec.ActDim
	var e enc
	e.u32(uint32(len(copies)))
	e.u32(uint32(ad))
	for _, k := range copies {
		e.u32(uint32(k))
	}
	for i, a := range actions {
		if len(a) != ad {
			return nil, fmt.Errorf("remote: %s: action %d has %d values, want %d", c.Addr, i, len(a), ad)
		}
		e.f64s(a)
	}
	p, err := c.call(msgStepBatch, e.b, msgStepBatchR, "step batch")
	if err != nil {
		return nil, err
	}
	d := dec{b: p}
	n := int(d.u32())
	if d.err == nil && n != len(copies) {
		return nil, c.fail("step batch", fmt.Errorf("%d answers for %d copies", n, len(copies)))
	}
	od := int(d.u32())
	if d.err == nil && od != c.Spec.ObsDim {
		return nil, c.fail("step batch", fmt.Errorf("observations of %d values, the spec says %d", od, c.Spec.ObsDim))
	}
	out := make([]BatchStep, len(copies))
	for i := range out {
		out[i].Reward = d.f64()
		f := d.u8()
		out[i].Terminated, out[i].Truncated = f&1 != 0, f&2 != 0
	}
	flat := d.f64s(len(copies) * c.Spec.ObsDim)
	if err := d.done(); err != nil {
		return nil, c.fail("step batch", fmt.Errorf("malformed answer: %w", err))
	}
	for i := range out {
		out[i].Obs = flat[i*od : (i+1)*od : (i+1)*od]
	}
	return out, nil
}

// Close tells the server to close the env and closes the connection.
func (c *Client) Close() error {
	if c.broken == nil {
		c.conn.SetDeadline(time.Now().Add(time.Second))
		writeFrame(c.conn, msgClose, nil)
		c.broken = fmt.Errorf("remote: %s: connection closed", c.Addr)
	}
	return c.conn.Close()
}

// Make connects to the environment server at addr (see Dial) and returns
// its environment as an envs.Env.
func Make(addr string, timeout time.Duration) (*envs.Env, error) {
	c, err := Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	e, err := envs.NewBackendEnv(c.Spec, c)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("remote: %s: %w", addr, err)
	}
	return e, nil
}

// Open returns the environment name names: a remote one (Make) for an
// address, else the built-in task (envs.Make).
func Open(name string, timeout time.Duration) (*envs.Env, error) {
	if IsAddress(name) {
		return Make(name, timeout)
	}
	return envs.Make(name)
}
