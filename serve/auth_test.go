package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testcert"
	"github.com/admpo/admpo/policies"
)

// TestBearerToken: with a token every route needs it (401 with
// WWW-Authenticate otherwise, wrong tokens included) except the public
// groups; unknown paths stay 404; the scheme matches in any case.
func TestBearerToken(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	p := f.open(t, policies.Options{Runtime: policies.RuntimeGo})
	const tok = "0123456789abcdef"
	ok := `{"obs":` + jsonVec(make([]float32, testObs)) + `}`
	send := func(h http.Handler, method, path, body, auth string) int {
		req, _ := http.NewRequest(method, path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := newRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("%s %s: 401 without WWW-Authenticate", method, path)
		}
		return rec.Code
	}
	for _, c := range []struct {
		public             []string
		health, metrics    int // without a token
		info, act, nowhere int
	}{
		{[]string{"health", "metrics"}, 200, 200, 401, 401, 404},
		{nil, 401, 401, 401, 401, 404},
		{[]string{"info"}, 401, 401, 200, 401, 404},
	} {
		h := New(p, Options{Token: tok, Public: c.public})
		got := []int{send(h, "GET", "/healthz", "", ""), send(h, "GET", "/metrics", "", ""), send(h, "GET", "/v1/info", "", ""),
			send(h, "POST", "/v1/act", ok, ""), send(h, "GET", "/nowhere", "", "")}
		want := []int{c.health, c.metrics, c.info, c.act, c.nowhere}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("public %v: healthz, metrics, info, act, unknown = %v, want %v", c.public, got, want)
			}
		}
		for _, auth := range []string{"Bearer " + tok[:15], "Bearer " + tok + "x", tok, "Bearer" + tok, "Basic " + tok, "Bearer " + tok + " "} {
			if code := send(h, "POST", "/v1/act", ok, auth); code != 401 {
				t.Fatalf("Authorization %q: %d, want 401", auth, code)
			}
		}
		// The scheme is case-insensitive and followed by one or more
		// spaces (RFC 9110 section 11).
		for _, auth := range []string{"bearer " + tok, "BEARER " + tok, "bEaReR " + tok, "Bearer  " + tok} {
			if code := send(h, "POST", "/v1/act", ok, auth); code != 200 {
				t.Fatalf("Authorization %q: %d, want 200", auth, code)
			}
		}
		for _, path := range []string{"/healthz", "/metrics", "/v1/info"} {
			if code := send(h, "GET", path, "", "Bearer "+tok); code != 200 {
				t.Fatalf("%s with the token: %d", path, code)
			}
		}
		if code := send(h, "POST", "/v1/act", ok, "Bearer "+tok); code != 200 {
			t.Fatalf("act with the token: %d", code)
		}
	}
}

// selfSigned returns a TLS certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	p, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	return p.Cert, p.Pool
}

// TestServeTLS serves over HTTPS with a self-signed certificate: a client
// trusting it gets 200 over TLS 1.2+, a plain-HTTP client and a client that
// does not trust the certificate fail.
func TestServeTLS(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	h := New(f.open(t, policies.Options{Runtime: policies.RuntimeGo}), Options{})
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeWith(ctx, ln, h, ServeOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	}()
	addr := ln.Addr().String()
	body := `{"obs":` + jsonVec(make([]float32, testObs)) + `}`
	good := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	resp, err := good.Post("https://"+addr+"/v1/act", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("HTTPS: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a client that does not trust the certificate connected")
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/healthz"); err == nil && resp.StatusCode == 200 {
		resp.Body.Close()
		t.Fatal("plain HTTP answered 200 on the TLS port")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
