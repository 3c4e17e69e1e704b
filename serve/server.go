package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Server timeouts set by NewServer.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
	// ShutdownGrace is how long Serve waits for in-flight requests after
	// its context is cancelled.
	ShutdownGrace = 10 * time.Second
	// MaxHeaderBytes bounds a request's line and headers (431 beyond).
	MaxHeaderBytes = 64 << 10
)

// NewServer returns an http.Server for h with admpo's timeouts and header
// limit.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// Run listens on addr (e.g. ":8080") and serves h until ctx is cancelled,
// then shuts down gracefully (see Serve).
func Run(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return Serve(ctx, ln, h)
}

// ServeOptions configure ServeWith.
type ServeOptions struct {
	// DrainDelay is how long the server keeps serving after ctx is
	// cancelled, with /healthz and /readyz answering 503, so that load
	// balancers and probes see the drain and stop sending traffic before
	// the listener closes. 0 closes it at once.
	DrainDelay time.Duration
	// SkipDrain, when it closes (or receives) during the drain delay, ends
	// the delay at once (e.g. a second SIGTERM).
	SkipDrain <-chan struct{}
	// TLS, when set, serves HTTPS with it (TLS 1.2 at least).
	TLS *tls.Config
}

// Serve serves h on ln until ctx is cancelled, then shuts down gracefully
// without a drain delay (see ServeWith).
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	return ServeWith(ctx, ln, h, ServeOptions{})
}

// ServeWith serves h on ln until ctx is cancelled. It then calls h.Drain
// when h has one (so /healthz and /readyz turn 503), keeps serving for
// opts.DrainDelay (new connections included, keep-alives off), stops
// accepting connections and waits up to ShutdownGrace for in-flight
// requests. It returns nil after a graceful shutdown and the server's error
// otherwise.
func ServeWith(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	srv := NewServer(ln.Addr().String(), h)
	errc := make(chan error, 1)
	if opts.TLS != nil {
		// TLS below the JSON-error connections (jsonErrConn), so that
		// they see the plain HTTP/1.1 bytes; HTTP/2 is not offered.
		cfg := opts.TLS.Clone()
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
		cfg.NextProtos = []string{"http/1.1"}
		ln = tls.NewListener(ln, cfg)
	}
	go func() { errc <- srv.Serve(jsonErrListener{ln}) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if d, ok := h.(interface{ Drain() }); ok {
		d.Drain()
	}
	if opts.DrainDelay > 0 {
		srv.SetKeepAlivesEnabled(false) // clients reconnect, and see the drain
		select {
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case <-time.After(opts.DrainDelay):
		case <-opts.SkipDrain:
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// jsonErrListener wraps each accepted connection in a jsonErrConn.
type jsonErrListener struct{ net.Listener }

// Accept returns the next connection, wrapped.
func (l jsonErrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrConn{Conn: c}, nil
}

// jsonErrConn turns the plain-text answers that net/http writes itself,
// before any handler runs (a malformed or slow request line, oversized
// headers, an unsupported transfer encoding), into the JSON error body
// every other error answer has. It remembers whether a read timed out, so
// that a request cut by ReadHeaderTimeout is answered 408.
type jsonErrConn struct {
	net.Conn
	timedOut atomic.Bool
}

// Read reads from the connection, noting a timeout.
func (c *jsonErrConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.timedOut.Store(true)
	}
	return n, err
}

// Write writes b, or its JSON form when b is one of net/http's own error
// answers.
func (c *jsonErrConn) Write(b []byte) (int, error) {
	out, ok := jsonErrorAnswer(b, c.timedOut.Load())
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// goErrorHeaders are the headers net/http's own error answers carry right
// after the status line (a response of a handler has a Date header first).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonErrorAnswer returns the JSON form of b when b is a whole error answer
// written by net/http itself ("HTTP/1.1 431 ..." + goErrorHeaders + text).
func jsonErrorAnswer(b []byte, timedOut bool) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !ok {
		return nil, false
	}
	i := bytes.Index(rest, []byte(goErrorHeaders))
	if i < 4 || bytes.ContainsAny(rest[:i], "\r\n") {
		return nil, false
	}
	status, text := string(rest[:i]), string(rest[i+len(goErrorHeaders):])
	var msg string
	switch code := status[:3]; {
	case code == "431":
		msg = fmt.Sprintf("request line and headers exceed %d bytes", MaxHeaderBytes)
	case code == "400" && timedOut:
		status, msg = "408 Request Timeout", fmt.Sprintf("the request line and headers did not arrive within %v", ReadHeaderTimeout)
	default:
		msg = "bad HTTP request"
		if _, detail, ok := strings.Cut(text, ": "); ok {
			msg += ": " + detail // e.g. "missing required Host header"
		} else if !strings.HasPrefix(text, code) {
			msg += ": " + strings.ToLower(text[:1]) + text[1:] // "Unsupported transfer encoding"
		}
	}
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body), true
}
