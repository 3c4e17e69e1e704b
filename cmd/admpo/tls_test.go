package main

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/testcert"
)

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key as PEM files and returns their paths and a pool trusting it.
func writeSelfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	p, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, p.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, p.Pool
}

// TestServeTLSAndToken runs `admpo serve` with a self-signed certificate and
// a bearer token: HTTPS answers, /healthz and /metrics are open by default,
// /v1/act needs the token; bad TLS and token flags are usage errors.
func TestServeTLSAndToken(t *testing.T) {
	bin := buildBinary(t)
	bundle := testBundle(t)
	certFile, keyFile, pool := writeSelfSigned(t)
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("api-token-0123456789\n"), 0o600)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	for _, args := range [][]string{
		{"--tls-cert", certFile},
		{"--tls-key", keyFile},
		{"--tls-cert", keyFile, "--tls-key", certFile},
		{"--token-file", short},
		{"--token-file", "/nonexistent"},
		{"--public", "health,everything"},
	} {
		r := runBin(t, bin, nil, append([]string{"serve", "--runtime", "go", "--bundle", bundle, "--addr", "127.0.0.1:0"}, args...)...)
		if r.code != 2 {
			t.Errorf("serve %v: exit %d, %q; want a usage error", args, r.code, r.stderr)
		}
	}
	cmd, line := startServe(t, bin, "--runtime", "go", "--bundle", bundle, "--addr", "127.0.0.1:0", "--drain-delay", "0s",
		"--tls-cert", certFile, "--tls-key", keyFile, "--token-file", tokFile)
	i := strings.Index(line, " on https://")
	if i < 0 {
		t.Fatalf("first line %q, want ... on https://ADDR", line)
	}
	base := line[i+4:]
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	do := func(method, path, body, tok string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	obs := `{"obs":[0,0,0,0,0,0,0,0,0,0,0]}`
	got := []int{do("GET", "/healthz", "", ""), do("GET", "/metrics", "", ""), do("POST", "/v1/act", obs, ""),
		do("POST", "/v1/act", obs, "wrong-token-0123456789"), do("POST", "/v1/act", obs, "api-token-0123456789")}
	want := []int{200, 200, 401, 401, 200}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("healthz, metrics, act, act wrong token, act token: %v, want %v", got, want)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}
