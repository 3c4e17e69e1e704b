package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/admpo/admpo/internal/regfile"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/serve"
	"github.com/admpo/admpo/train"
)

func runExport(args []string) error {
	fs := newFlags("export")
	run := fs.String("run", "", "run directory (from admpo train)")
	out := fs.String("out", "", "bundle directory to create (must not exist)")
	samples := fs.Int("calibration-samples", 5000, "real histories used for the U^ADM calibration")
	bound(fs, atLeast1, "calibration-samples")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *run == "" || *out == "" {
		return fmt.Errorf("%w: export needs --run and --out", errUsage)
	}
	b, r, err := train.ExportBundle(*run, *samples)
	if err != nil {
		return err
	}
	if err := policies.WriteBundle(*out, *b); err != nil {
		return err
	}
	fmt.Printf("wrote bundle %s (%s %s run, %s: policy", *out, r.Kind, b.Manifest.Algorithm, b.Manifest.Task)
	if b.ADM != nil {
		fmt.Printf(", ADM m=%d, U^ADM calibration from %d histories of %s: p50 %.4g, p95 %.4g, p99 %.4g",
			b.Manifest.M, b.Manifest.Calibration.Samples, r.RealData(), quantile(b.Manifest.Calibration, 50),
			quantile(b.Manifest.Calibration, 95), quantile(b.Manifest.Calibration, 99))
	}
	fmt.Println(")")
	return nil
}

func quantile(c *policies.Calibration, p float64) float64 {
	for _, q := range c.Quantiles {
		if q.P == p {
			return q.U
		}
	}
	return 0
}

func runServe(args []string) error {
	fs := newFlags("serve")
	bundle := fs.String("bundle", "", "bundle directory (from admpo export)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	rt := fs.String("runtime", "ort", "ort (ONNX Runtime) or go (pure Go, no shared library; no monitor)")
	stochastic := fs.Bool("stochastic", false, "sample actions instead of the deterministic mean")
	drain := fs.Duration("drain-delay", 5*time.Second, "after SIGTERM, keep serving this long with /healthz and /readyz at 503 before closing the listener")
	adminFile := fs.String("admin-token-file", "", "file holding the bearer token of POST /admin/reload (unset: the admin API is off)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token every request needs (Authorization: Bearer TOKEN; 401 without), except --public routes")
	public := fs.StringSlice("public", []string{"health", "metrics"}, "with --token-file, what stays open: health (/healthz, /readyz), metrics, info; \"\" for nothing")
	cert := fs.String("tls-cert", "", "PEM certificate (chain) file: serve HTTPS (with --tls-key)")
	key := fs.String("tls-key", "", "PEM private key file of --tls-cert")
	bound(fs, span{Lo: 0, Hi: 600}, "drain-delay")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *bundle == "" {
		return fmt.Errorf("%w: serve needs --bundle", errUsage)
	}
	if *rt != policies.RuntimeORT && *rt != policies.RuntimeGo {
		return fmt.Errorf("%w: serve: --runtime %q: want ort or go", errUsage, *rt)
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return fmt.Errorf("%w: serve: --addr %q: want HOST:PORT (e.g. 127.0.0.1:8080, :8080): %v", errUsage, *addr, err)
	}
	opts := serve.Options{}
	for _, g := range *public {
		if g != "" && !slices.Contains(serve.PublicGroups, g) {
			return fmt.Errorf("%w: --public %q: want some of %s", errUsage, g, strings.Join(serve.PublicGroups, ", "))
		}
		opts.Public = append(opts.Public, g)
	}
	if *tokenFile != "" {
		tok, err := readToken(*tokenFile)
		if err != nil {
			return fmt.Errorf("%w: --token-file: %v", errUsage, err)
		}
		opts.Token = tok
	}
	var tlsCfg *tls.Config
	if (*cert == "") != (*key == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	if *cert != "" {
		kp, err := loadKeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("%w: --tls-cert/--tls-key: %v", errUsage, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
	}
	if *adminFile != "" {
		tok, err := readToken(*adminFile)
		if err != nil {
			return fmt.Errorf("%w: --admin-token-file: %v", errUsage, err)
		}
		opts.AdminToken = tok
	}
	popts := policies.Options{Runtime: *rt, Stochastic: *stochastic}
	p, err := policies.Open(*bundle, popts)
	if err != nil {
		return err
	}
	defer p.Close()
	opts.Load = func() (*policies.Policy, error) { return policies.Open(*bundle, popts) }
	h := serve.New(p, opts)
	defer h.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// The first SIGINT/SIGTERM starts the drain, a second one cuts its delay.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	skip := make(chan struct{})
	term := make(chan os.Signal, 2)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(term)
	go func() {
		<-term
		stop()
		<-term
		close(skip)
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if np, err := h.Reload(); err != nil {
				fmt.Fprintf(os.Stderr, "admpo serve: SIGHUP: %v\n", err)
			} else {
				fmt.Printf("reloaded %s: bundle sha256 %s (%s)\n", *bundle, np.Digest(), np.Manifest().Algorithm)
			}
		}
	}()
	m := p.Manifest()
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	fmt.Printf("serving %s (%s, obs %d, act %d, runtime %s, bundle sha256 %s) on %s://%s\n",
		*bundle, m.Task, m.ObsDim, m.ActDim, p.Runtime(), p.Digest(), scheme, ln.Addr())
	return serve.ServeWith(ctx, ln, h, serve.ServeOptions{DrainDelay: *drain, SkipDrain: skip, TLS: tlsCfg})
}

// loadKeyPair is tls.LoadX509KeyPair reading both files with regfile.Read
// (at most 1 MiB each), so that a FIFO is refused instead of blocking.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := regfile.Read(certFile, 1<<20)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := regfile.Read(keyFile, 1<<20)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// maxTokenBytes bounds a token file.
const maxTokenBytes = 4096

// readToken reads a bearer token file: a regular file of at most
// maxTokenBytes whose content, trimmed of surrounding white space, is the
// token (at least 16 characters, printable ASCII without spaces).
func readToken(path string) (string, error) {
	b, err := regfile.Read(path, maxTokenBytes)
	if err != nil {
		return "", fmt.Errorf("%w: want a regular file of at most %d bytes", err, maxTokenBytes)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("%s: the token has %d characters, want at least 16", path, len(tok))
	}
	for _, c := range tok {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("%s: the token holds white space or a non-ASCII character", path)
		}
	}
	return tok, nil
}
