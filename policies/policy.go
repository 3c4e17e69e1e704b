package policies

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/stats"
)

// ErrClosed is returned by a Policy's methods after Close.
var ErrClosed = errors.New("policies: policy is closed")

// ErrNonFinite marks a NaN or infinite result computed from finite input
// (an action, or U^ADM): the input is far outside what the models handle,
// a problem of the input rather than of the server.
var ErrNonFinite = errors.New("non-finite result")

// Options configure Open.
type Options struct {
	// Runtime is "ort" (ONNX Runtime, the default) or "go" (pure Go; the
	// U^ADM monitor still needs ONNX Runtime and is unavailable without it).
	Runtime string
	// Sessions is how many actor sessions run concurrently (a pool; one
	// session is never used by two goroutines at once). Default
	// GOMAXPROCS, at most 16.
	Sessions int
	// Threads is ONNX Runtime's intra-op thread count per session
	// (default 1: batch-1 calls are fastest single-threaded).
	Threads int
	// Provider is the ONNX Runtime execution provider, "cpu" (default) or
	// "cuda".
	Provider string
	// Stochastic makes Act and ActBatch sample actions (from a seeded RNG)
	// instead of returning the deterministic mean action.
	Stochastic bool
	// Seed seeds the sampling RNG.
	Seed int64
	// NoMonitor skips loading adm.onnx.
	NoMonitor bool
}

func (o Options) threads() int {
	if o.Threads > 0 {
		return o.Threads
	}
	return 1
}

func (o Options) sessions() int {
	if o.Sessions > 0 {
		return min(o.Sessions, 64)
	}
	return min(runtime.GOMAXPROCS(0), 16)
}

// Policy is an opened bundle: the actor on the chosen runtime and, when
// the bundle has an ADM, the U^ADM Monitor. It is safe for concurrent use.
type Policy struct {
	man        Manifest
	digest     string
	runtime    string
	stochastic bool

	pool      chan actor
	size      int
	done      chan struct{}
	closeOnce sync.Once

	rngMu sync.Mutex
	rng   *rand.Rand

	mon    *Monitor
	monErr error
}

// Open reads, verifies (ReadBundle) and loads the bundle at path.
func Open(path string, opts Options) (*Policy, error) {
	b, err := ReadBundle(path)
	if err != nil {
		return nil, err
	}
	return OpenBundle(b, opts)
}

// OpenBundle loads a bundle held in memory, after checking its manifest
// against the models (checksums are not involved: they protect files).
func OpenBundle(b *Bundle, opts Options) (*Policy, error) {
	m := b.Manifest
	if err := m.Validate(); err != nil {
		return nil, err
	}
	pi, err := Inspect(b.Policy)
	if err != nil {
		return nil, fmt.Errorf("policies: %s: %w", PolicyFile, err)
	}
	var ai *ModelInfo
	if b.ADM != nil {
		if ai, err = Inspect(b.ADM); err != nil {
			return nil, fmt.Errorf("policies: %s: %w", ADMFile, err)
		}
	}
	if (b.ADM != nil) != m.HasADM() {
		return nil, fmt.Errorf("policies: the manifest and the bundle disagree on whether there is an %s", ADMFile)
	}
	if err := checkModels(&m, pi, ai); err != nil {
		return nil, err
	}
	rt := normRuntime(opts.Runtime)
	p := &Policy{man: m, digest: b.Digest(), runtime: rt, stochastic: opts.Stochastic,
		size: opts.sessions(), done: make(chan struct{}), rng: rand.New(rand.NewSource(opts.Seed))}
	actors, err := newActors(rt, b.Policy, pi, m.ObsDim, m.ActDim, p.size, opts)
	if err != nil {
		return nil, err
	}
	p.pool = make(chan actor, p.size)
	for _, a := range actors {
		p.pool <- a
	}
	switch {
	case b.ADM == nil:
		p.monErr = fmt.Errorf("policies: this bundle has no %s: the U^ADM monitor is unavailable", ADMFile)
	case opts.NoMonitor:
		p.monErr = errors.New("policies: the U^ADM monitor was not loaded (Options.NoMonitor)")
	default:
		p.mon, err = newMonitor(b.ADM, &m, opts)
		if err != nil {
			if rt != RuntimeGo || !errors.Is(err, infer.ErrORTMissing) {
				p.closeActors()
				return nil, err
			}
			p.monErr = fmt.Errorf("policies: the U^ADM monitor needs ONNX Runtime, which is unavailable: %w", err)
		}
	}
	return p, nil
}

func (p *Policy) closeActors() {
	for {
		select {
		case a := <-p.pool:
			a.close()
		default:
			return
		}
	}
}

// Manifest returns the bundle's manifest (its maps and slices are shared:
// do not modify them).
func (p *Policy) Manifest() Manifest { return p.man }

// Digest is the bundle's sha256 (Bundle.Digest): sha256sum of the
// manifest.json it was opened from.
func (p *Policy) Digest() string { return p.digest }

// ObsDim is the observation size.
func (p *Policy) ObsDim() int { return p.man.ObsDim }

// ActDim is the action size.
func (p *Policy) ActDim() int { return p.man.ActDim }

// Runtime is "ort" or "go".
func (p *Policy) Runtime() string { return p.runtime }

// Stochastic tells whether Act and ActBatch sample by default.
func (p *Policy) Stochastic() bool { return p.stochastic }

// Monitor returns the U^ADM monitor, or an error saying why there is none.
func (p *Policy) Monitor() (*Monitor, error) {
	if p.mon == nil {
		return nil, p.monErr
	}
	return p.mon, nil
}

// Act returns the action for one observation (deterministic unless the
// policy was opened with Options.Stochastic).
func (p *Policy) Act(obs []float32) ([]float32, error) {
	out := make([]float32, p.man.ActDim)
	if len(obs) != p.man.ObsDim {
		return nil, fmt.Errorf("policies: observation has %d values, want obs_dim=%d", len(obs), p.man.ObsDim)
	}
	if err := p.ActInto(out, obs, p.stochastic); err != nil {
		return nil, err
	}
	return out, nil
}

// ActBatch returns one action per observation.
func (p *Policy) ActBatch(obs [][]float32) ([][]float32, error) {
	od, ad := p.man.ObsDim, p.man.ActDim
	if len(obs) == 0 {
		return nil, errors.New("policies: empty observation batch")
	}
	flat := make([]float32, 0, len(obs)*od)
	for i, o := range obs {
		if len(o) != od {
			return nil, fmt.Errorf("policies: observation %d has %d values, want obs_dim=%d", i, len(o), od)
		}
		flat = append(flat, o...)
	}
	out := make([]float32, len(obs)*ad)
	if err := p.ActInto(out, flat, p.stochastic); err != nil {
		return nil, err
	}
	acts := make([][]float32, len(obs))
	for i := range acts {
		acts[i] = out[i*ad : (i+1)*ad : (i+1)*ad]
	}
	return acts, nil
}

// ActInto writes the actions for the n = len(obs)/ObsDim observations
// (row-major) into out [n·ActDim]. With stochastic, actions are sampled
// with noise from the policy's seeded RNG; otherwise they are the
// deterministic mean actions.
func (p *Policy) ActInto(out, obs []float32, stochastic bool) error {
	od, ad := p.man.ObsDim, p.man.ActDim
	if len(obs) == 0 || len(obs)%od != 0 {
		return fmt.Errorf("policies: %d observation values is not a positive multiple of obs_dim=%d", len(obs), od)
	}
	n := len(obs) / od
	if len(out) != n*ad {
		return fmt.Errorf("policies: output has room for %d values, want %d", len(out), n*ad)
	}
	if i := stats.FirstNonFinite(obs); i >= 0 {
		return fmt.Errorf("policies: observation %d value %d is %v", i/od, i%od, obs[i])
	}
	var noise []float32
	if stochastic {
		noise = make([]float32, n*ad)
		p.rngMu.Lock()
		for i := range noise {
			noise[i] = float32(p.rng.NormFloat64())
		}
		p.rngMu.Unlock()
	}
	var a actor
	select {
	case <-p.done:
		return ErrClosed
	case a = <-p.pool:
	}
	err := a.act(obs, noise, out)
	p.pool <- a
	if err != nil {
		return err
	}
	if i := stats.FirstNonFinite(out); i >= 0 {
		return fmt.Errorf("policies: %w: the policy produced %v for action %d value %d from a finite observation (it is probably far outside the training data)",
			ErrNonFinite, out[i], i/ad, i%ad)
	}
	return nil
}

// Close frees the sessions after in-flight calls finish. Later calls
// return ErrClosed.
func (p *Policy) Close() {
	p.closeOnce.Do(func() {
		close(p.done)
		for i := 0; i < p.size; i++ {
			(<-p.pool).close()
		}
		if p.mon != nil {
			p.mon.close()
		}
	})
}
