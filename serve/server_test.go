package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

// slowHandler holds /slow requests until released, to observe shutdown.
type slowHandler struct {
	*Handler
	entered chan struct{}
	release chan struct{}
	drained atomic.Bool
}

func (s *slowHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/slow" {
		close(s.entered)
		<-s.release
		io.WriteString(w, "done")
		return
	}
	s.Handler.ServeHTTP(w, r)
}

func (s *slowHandler) Drain() { s.drained.Store(true); s.Handler.Drain() }

func TestServeGracefulShutdown(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	h := &slowHandler{Handler: New(f.open(t, policies.Options{}), Options{}),
		entered: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, h) }()

	resp, err := http.Post(base+"/v1/act", "application/json", strings.NewReader(`{"obs":[0,0,0,0,0]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("before shutdown: %v %v", resp, err)
	}
	resp.Body.Close()

	slow := make(chan string, 1)
	go func() {
		r, err := http.Get(base + "/slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		slow <- string(b)
	}()
	<-h.entered
	cancel()
	// Serve must wait for the in-flight request.
	select {
	case err := <-served:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	case <-time.After(150 * time.Millisecond):
	}
	if !h.drained.Load() {
		t.Fatal("Drain was not called on shutdown")
	}
	// New connections are refused while draining.
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("listener still accepts connections during shutdown")
	}
	close(h.release)
	if got := <-slow; got != "done" {
		t.Fatalf("in-flight request: %q", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the last request")
	}
}

func TestRunBadAddress(t *testing.T) {
	if err := Run(context.Background(), "256.0.0.1:99999", http.NotFoundHandler()); err == nil {
		t.Fatal("Run on a bad address returned nil")
	}
	srv := NewServer(":0", http.NotFoundHandler())
	if srv.ReadHeaderTimeout == 0 || srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.MaxHeaderBytes == 0 {
		t.Fatalf("timeouts not set: %+v", srv)
	}
}

// TestDrainAnswersHealth503: after the context is cancelled, a server with a
// drain delay keeps accepting connections for that long, /healthz and
// /readyz answer 503 on new connections while /v1/act still works, and only
// then does it stop.
func TestDrainAnswersHealth503(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	h := New(f.open(t, policies.Options{}), Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	const delay = 800 * time.Millisecond
	go func() { served <- ServeWith(ctx, ln, h, ServeOptions{DrainDelay: delay}) }()
	if a, b := get("/healthz"), get("/readyz"); a != 200 || b != 200 {
		t.Fatalf("before the drain: healthz %d, readyz %d", a, b)
	}
	start := time.Now()
	cancel()
	time.Sleep(50 * time.Millisecond)
	if a, b := get("/healthz"), get("/readyz"); a != 503 || b != 503 {
		t.Fatalf("during the drain: healthz %d, readyz %d, want 503", a, b)
	}
	resp, err := http.Post(base+"/v1/act", "application/json", strings.NewReader(`{"obs":[0,0,0,0,0]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("act during the drain: %v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if d := time.Since(start); d < delay {
		t.Fatalf("Serve returned %v after the cancel, before the %v drain delay", d, delay)
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("listener still open after the drain")
	}
}
