package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

// TestServerOwnErrorsAreJSON sends requests that net/http answers itself,
// before any handler runs (oversized headers, a garbage request line, no
// Host, an unknown transfer encoding, a request line that stalls past
// ReadHeaderTimeout), over HTTP and HTTPS: each answer must be the JSON
// error body of every other error, with its status; a good request on the
// same server still gets its 200.
func TestServerOwnErrorsAreJSON(t *testing.T) {
	ortskip.IfMissing(t)
	h := New(newFixture(t, false).open(t, policies.Options{Runtime: policies.RuntimeGo}), Options{})
	cert, pool := selfSigned(t)
	for _, useTLS := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		opts := ServeOptions{}
		if useTLS {
			opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		}
		go func() { done <- ServeWith(ctx, ln, h, opts) }()
		dial := func() net.Conn {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if useTLS {
				tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
				if err := tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				return tc
			}
			return c
		}
		cases := []struct {
			name, send string
			wait       time.Duration // after sending, before reading
			code       int
			want       string
		}{
			{"oversized headers", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", MaxHeaderBytes+8192) + "\r\n\r\n", 0, 431, "exceed 65536 bytes"},
			{"garbage", "HELLO\r\n\r\n", 0, 400, "bad HTTP request"},
			{"no host", "GET /healthz HTTP/1.1\r\n\r\n", 0, 400, "missing required Host header"},
			{"transfer encoding", "POST /v1/act HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 0, 501, "unsupported transfer encoding"},
			{"slow request line", "GET /heal", ReadHeaderTimeout + time.Second, 408, "did not arrive within 5s"},
			{"good", "GET /v1/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0, 200, ""},
		}
		for _, c := range cases {
			t.Run(map[bool]string{false: "http", true: "https"}[useTLS]+" "+c.name, func(t *testing.T) {
				conn := dial()
				defer conn.Close()
				io.WriteString(conn, c.send)
				time.Sleep(c.wait)
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.code {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.code, body)
				}
				if c.code == 200 {
					return
				}
				var e struct{ Error string }
				if resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, c.want) {
					t.Fatalf("answer %q (Content-Type %q), want a JSON error containing %q", body, resp.Header.Get("Content-Type"), c.want)
				}
			})
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
