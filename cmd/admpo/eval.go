package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/admpo/admpo/envs/remote"
	"github.com/admpo/admpo/evaluate"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/train"
)

func runEval(args []string) error {
	fs := newFlags("eval")
	bundle := fs.String("bundle", "", "bundle directory (from admpo export)")
	run := fs.String("run", "", "run directory (from admpo train) instead of --bundle")
	episodes := fs.Int("episodes", 10, "episodes to play")
	seed := fs.Int64("seed", 0, "seed of the first episode's reset")
	rt := fs.String("runtime", "ort", "ort (ONNX Runtime) or go (pure Go)")
	task := fs.String("task", "", "task to play instead of the bundle's (same observation and action sizes): a built-in task\n"+
		"or a remote environment's server, tcp://HOST:PORT or unix:///PATH (a bundle from a remote run plays its own by default)")
	envFile := fs.String("env-file", "", "task file to play (default: the one a bundle trained on a task file records)")
	envTimeout := fs.Duration("env-timeout", remote.DefaultTimeout, "a remote environment's longest wait for a connection or an answer")
	copies := fs.Int("env-copies", 0, "a remote environment's episodes played at once on the env copies its server offers, stepped\n"+
		"in one request and acted on as one batch (deterministic episodes only; 0: up to 64; 1: one at a time)")
	stochastic := fs.Bool("stochastic", false, "sample actions instead of the deterministic mean")
	asJSON := fs.Bool("json", false, "print the result as JSON (every episode's return and length)")
	video := fs.String("video", "", "write the first episode as an animated GIF to this file, rendered offscreen by MuJoCo\n"+
		"through EGL (Mesa's surfaceless platform: no display or GPU needed; Debian: libegl1 libegl-mesa0 libgl1-mesa-dri)")
	videoW := fs.Int("video-width", 320, "--video frame width in pixels")
	videoH := fs.Int("video-height", 240, "--video frame height in pixels")
	videoFPS := fs.Float64("video-fps", 25, "--video frames per second of the task's time (every k-th env step is drawn)")
	bound(fs, span{Lo: 1, Hi: 1e6}, "episodes")
	bound(fs, span{Lo: 16, Hi: 4096}, "video-width", "video-height")
	bound(fs, span{Lo: 0, Hi: 1000, Open: true}, "video-fps")
	bound(fs, nonNeg, "seed")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
	bound(fs, span{Lo: 0, Hi: remote.MaxCopies}, "env-copies")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*bundle == "") == (*run == "") {
		return fmt.Errorf("%w: eval needs one of --bundle and --run", errUsage)
	}
	if *task != "" && *envFile != "" {
		return fmt.Errorf("%w: eval: --task and --env-file cannot both be given", errUsage)
	}
	if *rt != policies.RuntimeORT && *rt != policies.RuntimeGo {
		return fmt.Errorf("%w: eval: --runtime %q: want ort or go", errUsage, *rt)
	}
	if *video != "" {
		if err := checkVideoPath(*video); err != nil {
			return err
		}
	}
	if *run != "" {
		tmp, err := exportToTemp(*run)
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*bundle = filepath.Join(tmp, "bundle")
	}
	p, err := policies.Open(*bundle, policies.Options{Runtime: *rt, NoMonitor: true, Sessions: 1, Seed: *seed})
	if err != nil {
		return err
	}
	defer p.Close()
	cfg := evaluate.Config{Task: *task, TaskFile: *envFile, Episodes: *episodes, Seed: *seed, Stochastic: *stochastic, Timeout: *envTimeout, Copies: *copies}
	var rec *videoRecorder
	if *video != "" {
		rec = newVideoRecorder(*videoW, *videoH, *videoFPS)
		defer rec.close()
		cfg.OnStep = rec.onStep
	}
	r, err := evaluate.Run(p, cfg)
	if err != nil {
		return err
	}
	if rec != nil {
		if err := rec.write(*video); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s: episode 0, %d frames of %dx%d, one per %d env steps\n", *video, len(rec.frames), *videoW, *videoH, rec.stride)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	mode := "deterministic"
	if r.Stochastic {
		mode = "stochastic"
	}
	fmt.Printf("%s, runtime %s, %d %s episodes (seeds %d..%d): return %.1f ± %.1f",
		r.Task, r.Runtime, r.Episodes, mode, r.Seed, r.Seed+int64(r.Episodes)-1, r.ReturnMean, r.ReturnStd)
	if r.Score != nil {
		fmt.Printf(", D4RL normalised score %.1f ± %.1f", r.Score.Mean, r.Score.Std)
	}
	fmt.Println()
	// The rate goes to stderr: stdout holds only what the episodes decide.
	fmt.Fprintf(os.Stderr, "%d env steps in %.3fs: %.0f env steps/s", r.Steps, r.Seconds, float64(r.Steps)/max(r.Seconds, 1e-9))
	if r.Copies > 1 {
		fmt.Fprintf(os.Stderr, " (%d env copies at once)", r.Copies)
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

// exportToTemp writes run directory dir's bundle (as `admpo export`, with a
// small U^ADM calibration: eval does not monitor) into a new temporary
// directory, returned for the caller to remove; the bundle is its "bundle".
func exportToTemp(dir string) (string, error) {
	b, _, err := train.ExportBundle(dir, 100)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "admpo-eval-")
	if err != nil {
		return "", fmt.Errorf("eval: %w", err)
	}
	if err := policies.WriteBundle(filepath.Join(tmp, "bundle"), *b); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}
