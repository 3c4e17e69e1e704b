package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/evaluate"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/train"
)

func runPipeline(args []string) error {
	fs := newFlags("pipeline")
	env := fs.String("env", "hopper", "task (see: admpo envs list), or a remote environment's server: tcp://HOST:PORT or\n"+
		"unix:///PATH (docs/remote-envs.md)")
	envFile := fs.String("env-file", "", "train on the task in this file instead of --env (see admpo train online --help)")
	envTimeout := fs.Duration("env-timeout", remote.DefaultTimeout, "a remote environment's longest wait for a connection or an answer")
	steps := fs.Int("steps", 4000, "env steps of the training run")
	seed := fs.Int64("seed", 0, "random seed")
	out := fs.String("out", filepath.Join("runs", "pipeline"), "output directory")
	episodes := fs.Int("episodes", 5, "evaluation episodes")
	rows := fs.Int("rollout-rows", 10000, "start rows of the roll-out benchmark")
	bound(fs, atLeast1, "steps", "episodes", "rollout-rows")
	bound(fs, anyNum, "seed")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.Changed("env") && fs.Changed("env-file") {
		return usageErr(fmt.Errorf("pipeline: --env and --env-file cannot both be given"))
	}
	if fs.Changed("env-timeout") && !remote.IsAddress(*env) {
		return usageErr(fmt.Errorf("pipeline: --env-timeout applies to a remote environment (--env tcp://HOST:PORT or unix:///PATH), not %s", *env))
	}
	termination := ""
	task, rem, err := onlineEnv(*env, *envFile, &termination, *envTimeout, true)
	if err != nil {
		return err
	}
	cfg, err := train.Preset("quick", task.Preset, "admpo", task.ActDim)
	if err != nil {
		return err
	}
	cfg.Env, cfg.EnvFile, cfg.EnvDigest, cfg.Termination, cfg.Remote = task.Name, task.File, task.Digest, termination, rem
	// --steps counts all env steps; the config's steps are those after the warm-up.
	cfg.Seed, cfg.WarmUp = *seed, max(min(cfg.WarmUp, *steps/4), cfg.MinWarmUp())
	cfg.Steps = *steps - cfg.WarmUp
	if cfg.Steps < 1 {
		return usageErr(fmt.Errorf("pipeline: --steps %d: ADMPO's warm-up alone needs %d env steps; give more", *steps, cfg.WarmUp))
	}
	cfg.Rollout.A, cfg.Rollout.B = 0, cfg.Steps
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	if err := infer.Init(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(*out, ".admpo-pipeline")); err == nil {
		if err := os.RemoveAll(*out); err != nil {
			return err
		}
	} else if ents, err := os.ReadDir(*out); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s exists and is not an earlier pipeline's output: choose another --out", *out)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(*out, ".admpo-pipeline"), nil, 0o644)
	start := time.Now()

	// 1. Train.
	fmt.Printf("== 1/4 training ADMPO-ON on %s for %d env steps (quick preset)\n", task.Name, *steps)
	runDir := filepath.Join(*out, "run")
	o, err := train.NewOnline(cfg, runDir)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	o.OnStatus(statusPrinter(cfg.TotalSteps(), 0))
	err = o.Run(ctx)
	o.Close()
	if errors.Is(err, train.ErrInterrupted) {
		return fmt.Errorf("interrupted; the run can be continued with: admpo train online --resume %s", runDir)
	}
	if err != nil {
		return err
	}
	fmt.Printf("   trained in %s\n", time.Since(start).Round(time.Second))

	// 2. Export.
	fmt.Printf("== 2/4 exporting the bundle\n")
	bundleDir := filepath.Join(*out, "bundle")
	b, run, err := train.ExportBundle(runDir, 5000)
	if err != nil {
		return err
	}
	if err := policies.WriteBundle(bundleDir, *b); err != nil {
		return err
	}
	fmt.Printf("   %s: policy.onnx (%d KB), adm.onnx (%d KB), manifest.json; U^ADM p50 %.4g, p99 %.4g on real histories\n",
		bundleDir, len(b.Policy)/1024, len(b.ADM)/1024, quantile(b.Manifest.Calibration, 50), quantile(b.Manifest.Calibration, 99))

	// 3. Roll-out benchmark with the trained ADM.
	fmt.Printf("== 3/4 benchmarking ADM roll-outs (%d rows, H 5)\n", *rows)
	adm, err := models.GetADM(run.Checkpoint(), "adm")
	if err != nil {
		return err
	}
	direct, err := onnx.ExportADM(adm, onnx.ADMOptions{Form: onnx.ADMUnrolled}, nil)
	if err != nil {
		return err
	}
	step, err := onnx.ExportADMStep(adm, nil)
	if err != nil {
		return err
	}
	for _, pen := range []bool{false, true} {
		res, err := infer.BenchRollout(infer.BenchConfig{Actor: b.Policy, ADM: direct, ADMStep: step, Rows: *rows, Horizon: 5, Penalty: pen, Seed: 1})
		if err != nil {
			return err
		}
		style := "ADMPO-ON, no penalty"
		if pen {
			style = "ADMPO-OFF, U^ADM   "
		}
		for _, r := range res {
			fmt.Printf("   %s  %-11s %8.0f transitions/s\n", style, r.Engine, r.PerSecond)
		}
	}

	// 4. Evaluate the deployed policy on both runtimes.
	fmt.Printf("== 4/4 evaluating the deployed policy (%d deterministic episodes)\n", *episodes)
	var returns [2]float64
	for i, rt := range []string{"ort", "go"} {
		p, err := policies.Open(bundleDir, policies.Options{Runtime: rt, NoMonitor: true})
		if err != nil {
			return err
		}
		// The bundle's own task: the built-in task, the task file or the remote environment it trained on.
		res, err := evaluate.Run(p, evaluate.Config{Episodes: *episodes, Seed: *seed + 1000, Timeout: *envTimeout})
		p.Close()
		if err != nil {
			return err
		}
		mean := res.ReturnMean
		returns[i] = mean
		fmt.Printf("   runtime %-3s: mean return %.1f\n", rt, mean)
	}
	if math.Abs(returns[0]-returns[1]) > 1e-3*math.Max(1, math.Abs(returns[0])) {
		fmt.Printf("   note: the runtimes' returns differ by %.3g (float rounding can change long episodes)\n", returns[0]-returns[1])
	}
	fmt.Printf("done in %s: run %s, bundle %s (serve it with: admpo serve --bundle %s)\n",
		time.Since(start).Round(time.Second), runDir, bundleDir, bundleDir)
	return nil
}
