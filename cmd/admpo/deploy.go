package main

import (
	"fmt"
	"math/rand"
	"strconv"
	"time"

	"github.com/admpo/admpo/envs"
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
		"Writes a bundle directory from a finished run: policy.onnx, adm.onnx (ADMPO runs) and\n"+
			"manifest.json with the task, dims, action bounds, the ADM's normaliser, m, sha256 of every file,\n"+
			"provenance, and the U^ADM calibration: percentiles of U^ADM over histories sampled from the\n"+
			"run's real data. The bundle is written atomically and verified when opened.")
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
	b, err := exportBundle(*run, *samples)
	if err != nil {
		return err
	}
	if err := policies.WriteBundle(*out, *b); err != nil {
		return err
	}
	fmt.Printf("wrote bundle %s (policy", *out)
	if b.ADM != nil {
		fmt.Printf(", ADM m=%d, U^ADM calibration from %d histories: p50 %.4g, p95 %.4g, p99 %.4g",
			b.Manifest.M, b.Manifest.Calibration.Samples, quantile(b.Manifest.Calibration, 50),
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

// exportBundle assembles a bundle from a run directory, calibrating U^ADM
// on histories from the run's real replay buffer.
func exportBundle(dir string, samples int) (*policies.Bundle, error) {
	r, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	e, err := envs.Make(r.Config.Env)
	if err != nil {
		return nil, err
	}
	lo, hi := e.ActionLow(), e.ActionHigh()
	e.Close()
	b := &policies.Bundle{Policy: r.Policy, Manifest: policies.Manifest{
		Task: r.Config.Env, Algorithm: r.Config.Algo + "-on", ActLow: lo, ActHigh: hi,
		Provenance: map[string]string{"run": dir, "seed": strconv.FormatInt(r.Config.Seed, 10),
			"env_steps": strconv.Itoa(r.Step), "preset": r.Config.Preset, "exported": time.Now().UTC().Format(time.RFC3339)}}}
	if r.Config.Algo != "admpo" || r.Model == nil {
		return b, b.Complete()
	}
	b.ADM = r.Model
	// Calibrate on real histories: open the bundle in memory for its monitor.
	if err := b.Complete(); err != nil {
		return nil, err
	}
	p, err := policies.OpenBundle(b, policies.Options{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	mon, err := p.Monitor()
	if err != nil {
		return nil, err
	}
	obs, acts, lens, err := r.Real.Windows(samples, mon.M(), rand.New(rand.NewSource(r.Config.Seed)))
	if err != nil {
		return nil, err
	}
	od, ad := r.Real.ObsDim, r.Real.ActDim
	us := make([]float64, 0, len(lens))
	for i, at := 0, 0; i < len(lens); i++ {
		l := lens[i]
		rd, err := mon.Uncertainty(obs[at*od:(at+l)*od], acts[at*ad:(at+l)*ad])
		if err != nil {
			return nil, err
		}
		at += l
		if rd.K > 1 { // a single plan has no spread to compare
			us = append(us, rd.U)
		}
	}
	if b.Manifest.Calibration, err = policies.Calibrate(us); err != nil {
		return nil, err
	}
	return b, b.Complete()
}

func runServe(args []string) error {
	fs := newFlags("serve", "serve --bundle BUNDLE [--addr 127.0.0.1:8080]",
		"Serves a bundle over HTTP: POST /v1/act (one observation or a batch, optional history for the\n"+
			"U^ADM monitor), GET /healthz, GET /v1/info (the manifest), GET /metrics (Prometheus).\n"+
			"SIGINT/SIGTERM drain in-flight requests and stop.")
	bundle := fs.String("bundle", "", "bundle directory (from admpo export)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	rt := fs.String("runtime", "ort", "ort (ONNX Runtime) or go (pure Go, no shared library; no monitor)")
	stochastic := fs.Bool("stochastic", false, "sample actions instead of the deterministic mean")
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
	ctx, stop := interruptible()
	defer stop()
	m := p.Manifest()
	fmt.Printf("serving %s (%s, obs %d, act %d, runtime %s) on http://%s\n", *bundle, m.Task, m.ObsDim, m.ActDim, p.Runtime(), *addr)
	return serve.Run(ctx, *addr, serve.New(p, serve.Options{}))
}
