package main

import (
	"fmt"
	"net"
	"time"

	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/serve"
	"github.com/admpo/admpo/train"
)

func init() {
	register(&command{name: "export", summary: "turn a finished run into a deployable policy bundle", run: runExport})
	register(&command{name: "serve", summary: "serve a policy bundle over HTTP (actions + U^ADM monitor)", run: runServe})
}

func runExport(args []string) error {
	fs := newFlags("export", "export --run DIR --out BUNDLE",
		"Writes a bundle directory from a finished run of any kind (train online: admpo, mbpo, sac;\n"+
			"train offline: admpo, mopo, bc, on a task's data set or on your own data): policy.onnx,\n"+
			"adm.onnx (ADMPO runs) and manifest.json with the task, algorithm, run kind, dims, action\n"+
			"bounds, the ADM's normaliser, m, sha256 of every file, provenance, and the U^ADM calibration:\n"+
			"percentiles of U^ADM over histories sampled from the run's real data (an online run's real\n"+
			"replay buffer; an offline run's data set, which must be unchanged). The bundle is written\n"+
			"atomically and verified when opened.")
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
	b, info, err := train.ExportBundle(*run, *samples)
	if err != nil {
		return err
	}
	if err := policies.WriteBundle(*out, *b); err != nil {
		return err
	}
	fmt.Printf("wrote bundle %s (%s %s run, %s: policy", *out, info.Kind, b.Manifest.Algorithm, b.Manifest.Task)
	if b.ADM != nil {
		fmt.Printf(", ADM m=%d, U^ADM calibration from %d histories of %s: p50 %.4g, p95 %.4g, p99 %.4g",
			b.Manifest.M, b.Manifest.Calibration.Samples, info.Histories, quantile(b.Manifest.Calibration, 50),
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
	fs := newFlags("serve", "serve --bundle BUNDLE [--addr 127.0.0.1:8080]",
		"Serves a bundle over HTTP: POST /v1/act (one observation or a batch, optional history for the\n"+
			"U^ADM monitor), GET /healthz and GET /readyz (200, or 503 while draining), GET /v1/info (the\n"+
			"manifest), GET /metrics (Prometheus). The README's serving section documents the API.\n"+
			"SIGINT/SIGTERM start the drain: /healthz and /readyz answer 503 for --drain-delay while\n"+
			"everything else is still served, then the listener closes and in-flight requests finish.")
	bundle := fs.String("bundle", "", "bundle directory (from admpo export)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	rt := fs.String("runtime", "ort", "ort (ONNX Runtime) or go (pure Go, no shared library; no monitor)")
	stochastic := fs.Bool("stochastic", false, "sample actions instead of the deterministic mean")
	drain := fs.Duration("drain-delay", 5*time.Second, "after SIGTERM, keep serving this long with /healthz and /readyz at 503 before closing the listener")
	bound(fs, span{Lo: 0, Hi: 600}, "drain-delay")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *bundle == "" {
		return fmt.Errorf("%w: serve needs --bundle", errUsage)
	}
	p, err := policies.Open(*bundle, policies.Options{Runtime: *rt, Stochastic: *stochastic})
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ctx, stop := interruptible()
	defer stop()
	m := p.Manifest()
	fmt.Printf("serving %s (%s, obs %d, act %d, runtime %s) on http://%s\n", *bundle, m.Task, m.ObsDim, m.ActDim, p.Runtime(), ln.Addr())
	return serve.ServeWith(ctx, ln, serve.New(p, serve.Options{}), serve.ServeOptions{DrainDelay: *drain})
}
