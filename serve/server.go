package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
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
		MaxHeaderBytes:    64 << 10,
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
		cfg := opts.TLS.Clone()
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
		srv.TLSConfig = cfg
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
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
