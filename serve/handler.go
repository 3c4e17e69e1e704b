package serve

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admpo/admpo/policies"
)

// Routes, also the "route" label of the metrics.
const (
	routeAct     = "/v1/act"
	routeInfo    = "/v1/info"
	routeHealth  = "/healthz"
	routeReady   = "/readyz"
	routeReload  = "/admin/reload"
	routeMetrics = "/metrics"
	routeOther   = "other"
)

// Options configure the handler.
type Options struct {
	// MaxBodyBytes bounds a request body (default 1 MiB); larger bodies get
	// 413.
	MaxBodyBytes int64
	// MaxBatch bounds the observations per request (default 1024).
	MaxBatch int
	// MaxHistory bounds the history steps per request (default 1024; only
	// the last m-1 are used).
	MaxHistory int
	// Load opens the bundle again for Reload (SIGHUP, POST /admin/reload);
	// nil disables reloading.
	Load func() (*policies.Policy, error)
	// AdminToken is the bearer token POST /admin/reload requires; empty
	// disables the admin route (403).
	AdminToken string
	// Token, when set, is the bearer token every request needs (401
	// without it), except those to the routes in Public.
	Token string
	// Public lists what stays open without Token: "health" (/healthz,
	// /readyz), "metrics", "info".
	Public []string
}

// PublicGroups are the names Options.Public accepts.
var PublicGroups = []string{"health", "metrics", "info"}

// public tells whether route is open without the API token.
func (o Options) public(route string) bool {
	if route == routeReload {
		return true // it checks the admin token itself
	}
	group := map[string]string{routeHealth: "health", routeReady: "health", routeMetrics: "metrics", routeInfo: "info"}[route]
	return group != "" && slices.Contains(o.Public, group)
}

func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 1024
	}
	return o
}

// Handler serves a policy. It is safe for concurrent use.
type Handler struct {
	cur      atomic.Pointer[state]
	reloadMu sync.Mutex // one Reload at a time
	opts     Options
	metrics  *metrics
	mux      *http.ServeMux
	draining atomic.Bool
	bufs     sync.Pool
}

// state is one loaded policy with what the handler derives from it.
// Requests hold mu for reading while they use it; Reload swaps in a new
// state, then takes mu for writing (waiting for the requests on the old
// policy to finish) before closing the old policy.
type state struct {
	mu      sync.RWMutex
	closed  bool
	p       *policies.Policy
	mon     *policies.Monitor
	monErr  error
	lim     limits
	info    []byte
	infoErr error
}

func newState(p *policies.Policy, opts Options) *state {
	s := &state{p: p, lim: limits{obsDim: p.ObsDim(), actDim: p.ActDim(), maxBatch: opts.MaxBatch, maxHistory: opts.MaxHistory}}
	man := p.Manifest()
	mj, err := policies.MarshalManifest(&man)
	if err == nil {
		s.info, err = json.Marshal(struct {
			SHA256   string          `json:"bundle_sha256"`
			RunKind  string          `json:"run_kind"`
			Runtime  string          `json:"runtime"`
			Manifest json.RawMessage `json:"manifest"`
		}{p.Digest(), man.RunKind, p.Runtime(), mj})
	}
	s.info, s.infoErr = append(s.info, '\n'), err
	s.mon, s.monErr = p.Monitor()
	return s
}

// New returns the HTTP handler serving p (see the package documentation
// for the routes). The caller keeps ownership of p and closes it after the
// server has stopped (Close); a Reload closes the policy it replaces once
// its requests are done (Policy.Close may be called twice).
func New(p *policies.Policy, opts Options) *Handler {
	opts = opts.withDefaults()
	h := &Handler{opts: opts, metrics: newMetrics()}
	h.cur.Store(newState(p, opts))
	h.metrics.setBundle(p)
	h.bufs.New = func() any { return new(bytes.Buffer) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+routeAct, h.act)
	mux.HandleFunc("GET "+routeInfo, h.getInfo)
	mux.HandleFunc("GET "+routeHealth, h.health)
	mux.HandleFunc("GET "+routeReady, h.health)
	mux.HandleFunc("GET "+routeMetrics, h.getMetrics)
	mux.HandleFunc("POST "+routeReload, h.adminReload)
	h.mux = mux
	return h
}

// acquire returns the current state, held for reading until release.
func (h *Handler) acquire() *state {
	for {
		s := h.cur.Load()
		s.mu.RLock()
		if !s.closed {
			return s
		}
		s.mu.RUnlock() // replaced and closed meanwhile: take the new one
	}
}

// Policy returns the policy being served now.
func (h *Handler) Policy() *policies.Policy { return h.cur.Load().p }

// ErrNoReload is returned by Reload when Options.Load is nil.
var ErrNoReload = errors.New("serve: reloading is not configured")

// Reload opens the bundle again with Options.Load and, if that succeeds,
// swaps it in atomically: requests already running finish on the old
// policy, later ones use the new one, and the old policy is closed once
// its requests are done. If loading fails nothing changes and the error
// is returned. It returns the new policy.
func (h *Handler) Reload() (*policies.Policy, error) {
	if h.opts.Load == nil {
		return nil, ErrNoReload
	}
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	p, err := h.opts.Load()
	if err != nil {
		h.metrics.reloaded(false)
		return nil, fmt.Errorf("serve: reload refused, still serving bundle %s: %w", h.cur.Load().p.Digest(), err)
	}
	old := h.cur.Swap(newState(p, h.opts))
	h.metrics.setBundle(p)
	h.metrics.reloaded(true)
	old.mu.Lock() // waits for the requests on the old policy
	old.closed = true
	old.mu.Unlock()
	old.p.Close()
	return p, nil
}

// Close closes the policy being served (call it after the server stopped).
func (h *Handler) Close() {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	s := h.cur.Load()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.p.Close()
}

// Drain makes /healthz and /readyz answer 503 so that load balancers and
// readiness probes stop sending traffic; Serve calls it when shutting down.
// Requests to the other routes are still served.
func (h *Handler) Drain() { h.draining.Store(true) }

// ServeHTTP implements http.Handler: it routes, records metrics and turns a
// panic into a 500.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h.metrics.inFlight.Inc()
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			if !sw.wrote {
				writeError(sw, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", v))
			}
			sw.code = http.StatusInternalServerError
		}
		h.metrics.inFlight.Dec()
		h.metrics.record(routeOf(r.URL.Path), sw.code, time.Since(start))
	}()
	m, ok := routeMethods[r.URL.Path]
	if !ok {
		writeError(sw, http.StatusNotFound, fmt.Sprintf("not found: no route %s (routes: %s)", r.URL.Path, routeList))
		return
	}
	if h.opts.Token != "" && !h.opts.public(r.URL.Path) && !bearerOK(r, h.opts.Token) {
		sw.Header().Set("WWW-Authenticate", `Bearer realm="admpo"`)
		writeError(sw, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
		return
	}
	if r.Method != m && !(m == http.MethodGet && r.Method == http.MethodHead) {
		sw.Header().Set("Allow", allowHeader(m))
		writeError(sw, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s: use %s", r.Method, r.URL.Path, m))
		return
	}
	h.mux.ServeHTTP(sw, r)
}

// routeMethods is each route's method (GET routes also answer HEAD).
var routeMethods = map[string]string{
	routeAct: http.MethodPost, routeInfo: http.MethodGet, routeHealth: http.MethodGet,
	routeReady: http.MethodGet, routeMetrics: http.MethodGet, routeReload: http.MethodPost,
}

// routeList names the routes in 404 answers.
var routeList = "POST /v1/act, GET /v1/info, GET /healthz, GET /readyz, GET /metrics, POST /admin/reload"

func allowHeader(m string) string {
	if m == http.MethodGet {
		return "GET, HEAD"
	}
	return m
}

func routeOf(path string) string {
	switch path {
	case routeAct, routeInfo, routeHealth, routeReady, routeMetrics, routeReload:
		return path
	}
	return routeOther
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

// WriteHeader records the first status code and forwards it.
func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write marks the response as started and forwards b.
func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// health answers /healthz and /readyz: 200 "ok" while serving, 503
// "draining" once Drain was called.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.draining.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "draining\n")
		return
	}
	io.WriteString(w, "ok\n")
}

func (h *Handler) getInfo(w http.ResponseWriter, r *http.Request) {
	s := h.acquire()
	defer s.mu.RUnlock()
	if s.infoErr != nil {
		writeError(w, http.StatusInternalServerError, s.infoErr.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.info)
}

// adminReload answers POST /admin/reload: with the admin bearer token, it
// reloads the bundle (200 with the new bundle's sha256, or 422 naming why
// the new bundle was refused while the old one keeps serving).
func (h *Handler) adminReload(w http.ResponseWriter, r *http.Request) {
	if h.opts.AdminToken == "" {
		writeError(w, http.StatusForbidden, "the admin API is disabled (start admpo serve with --admin-token-file)")
		return
	}
	if !bearerOK(r, h.opts.AdminToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="admpo admin"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong admin bearer token")
		return
	}
	p, err := h.Reload()
	if errors.Is(err, ErrNoReload) {
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	b, _ := json.Marshal(struct {
		Reloaded bool   `json:"reloaded"`
		SHA256   string `json:"bundle_sha256"`
		RunKind  string `json:"run_kind"`
	}{true, p.Digest(), p.Manifest().RunKind})
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// bearerOK tells whether r carries "Authorization: Bearer TOKEN", the
// scheme matched case-insensitively (RFC 9110 section 11.1) and the token
// compared in constant time.
func bearerOK(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	got = strings.TrimLeft(got, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func (h *Handler) getMetrics(w http.ResponseWriter, r *http.Request) {
	h.metrics.handler.ServeHTTP(w, r)
}

func (h *Handler) act(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: want application/json", ct))
		return
	}
	buf := h.bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			h.bufs.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err))
		return
	}
	st := h.acquire()
	defer st.mu.RUnlock()
	req, err := decodeRequest(buf.Bytes(), st.lim)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			writeError(w, he.status, he.msg)
		} else {
			writeError(w, http.StatusBadRequest, err.Error())
		}
		return
	}
	if req.history && st.mon == nil {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("\"history\" needs the U^ADM monitor: %v", st.monErr))
		return
	}
	observe(h.metrics.batch, float64(req.n))
	stochastic := st.p.Stochastic() // policies.Options.Stochastic; deterministic by default
	if req.deterministic != nil {
		stochastic = !*req.deterministic
	}
	ad := st.p.ActDim()
	out := make([]float32, req.n*ad)
	if err := st.p.ActInto(out, req.obs, stochastic); err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	resp := buf.AvailableBuffer()[:0]
	if req.batch {
		resp = append(resp, `{"actions":[`...)
		for i := 0; i < req.n; i++ {
			if i > 0 {
				resp = append(resp, ',')
			}
			resp = appendFloats(resp, out[i*ad:(i+1)*ad])
		}
		resp = append(resp, ']')
	} else {
		resp = append(resp, `{"action":`...)
		resp = appendFloats(resp, out)
	}
	if req.history {
		obs := append(req.histObs, req.obs...)
		acts := append(req.histAct, out...)
		rd, err := st.mon.Uncertainty(obs, acts)
		if err != nil {
			writeError(w, errorStatus(err), err.Error())
			return
		}
		observe(h.metrics.uadm, rd.U)
		resp = append(resp, `,"uadm":{"u":`...)
		resp = strconv.AppendFloat(resp, rd.U, 'g', -1, 64)
		resp = append(resp, `,"k":`...)
		resp = strconv.AppendInt(resp, int64(rd.K), 10)
		if rd.Calibrated {
			resp = append(resp, `,"percentile":`...)
			resp = strconv.AppendFloat(resp, rd.Percentile, 'g', -1, 64)
			observe(h.metrics.rank, rd.Percentile/100)
		}
		switch {
		case !rd.RangeChecked: // a bundle whose calibration records no range
			resp = append(resp, `,"out_of_range":null`...)
		case rd.OutOfRange:
			h.metrics.outOfRange.Inc()
			resp = append(resp, `,"out_of_range":true,"excess":`...)
			resp = strconv.AppendFloat(resp, rd.Excess, 'g', -1, 64)
			resp = append(resp, `,"where":`...)
			resp = strconv.AppendQuote(resp, rd.Where)
		default:
			resp = append(resp, `,"out_of_range":false`...)
		}
		resp = append(resp, '}')
	}
	resp = append(resp, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
	w.Write(resp)
}

// errorStatus is the HTTP status for an error of the policy or monitor: a
// non-finite result from the client's finite input is 422, a closed policy
// 503, anything else 500.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, policies.ErrNonFinite):
		return http.StatusUnprocessableEntity
	case errors.Is(err, policies.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func isJSON(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}

func appendFloats(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']')
}
