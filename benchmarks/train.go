package benchmarks

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

//go:embed torch_train.py
var torchTrainScript []byte

// TorchPython is the interpreter that has Debian's python3-torch.
const TorchPython = "/usr/bin/python3"

// TorchTrain is what the PyTorch baseline script reports.
type TorchTrain struct {
	Version   string  `json:"torch"`
	Threads   int     `json:"threads"`
	CriticMS  float64 `json:"critic_ms"`
	ActorMS   float64 `json:"actor_ms"`
	ADMStepMS float64 `json:"adm_step_ms"`
}

// RunTorchTrain runs the embedded PyTorch script; it fails when
// python3-torch is not installed.
func RunTorchTrain(iters, threads int) (*TorchTrain, error) {
	if _, err := os.Stat(TorchPython); err != nil {
		return nil, fmt.Errorf("benchmarks: %s not found (install python3-torch for the PyTorch baseline)", TorchPython)
	}
	dir, err := os.MkdirTemp("", "admpo-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "torch_train.py")
	if err := os.WriteFile(script, torchTrainScript, 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(TorchPython, script, "--iters", strconv.Itoa(iters), "--threads", strconv.Itoa(threads)).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		return nil, fmt.Errorf("benchmarks: PyTorch baseline failed (is python3-torch installed?): %v %s", err, msg)
	}
	var t TorchTrain
	if err := json.Unmarshal(out, &t); err != nil {
		return nil, fmt.Errorf("benchmarks: PyTorch baseline output %q: %w", out, err)
	}
	return &t, nil
}

// PeakProduct is one thread's single-precision matrix product speed,
// n×n×n, best of reps, in GFLOP/s: with cpukern's best path for this CPU
// (whatever path is active) and with OpenBLAS as this process loaded it.
type PeakProduct struct {
	N                 int
	Path              cpukern.ISA
	CPUKern, OpenBLAS float64
}

// Best is the higher of the two.
func (p PeakProduct) Best() float64 { return max(p.CPUKern, p.OpenBLAS) }

// Higher is p with each library's speed the higher of p's and q's (two
// measurements of one machine, whose speed drifts on a shared host).
func (p PeakProduct) Higher(q PeakProduct) PeakProduct {
	p.CPUKern, p.OpenBLAS = max(p.CPUKern, q.CPUKern), max(p.OpenBLAS, q.OpenBLAS)
	return p
}

// MeasurePeak measures PeakProduct on one thread.
func MeasurePeak(n, reps int) PeakProduct {
	threads, active := blas.Threads(), cpukern.Active()
	blas.SetThreads(1)
	_ = cpukern.Use(cpukern.Detected())
	defer func() {
		blas.SetThreads(threads)
		_ = cpukern.Use(active)
	}()
	return PeakProduct{N: n, Path: cpukern.Detected(), CPUKern: cpukern.PeakGFLOPS(n, reps), OpenBLAS: blas.PeakSgemm(n, reps)}
}

// Train measures admpo's SAC update and ADM train step and, when torch is
// true, the same computations in PyTorch, and returns the table: times,
// the achieved GFLOP/s of each step's matrix products and their share of
// the one-thread product peak measured in the same run. With from, a run
// directory of a SAC-based algorithm, it also times the SAC update of that
// run's agent as its checkpoint left it (network sizes from the checkpoint, batch
// size and α tuning from config.json).
func Train(iters int, torch bool, torchThreads int, from string) (*Table, error) {
	var trained *trainedRun
	if from != "" { // read first: a bad directory fails before minutes of timing
		var err error
		if trained, err = loadTrainedRun(from); err != nil {
			return nil, err
		}
	}
	// The peak is measured before and after the steps and the higher taken:
	// a virtual machine's core speed drifts with its host's load (114-146
	// GFLOP/s within a minute on the development VM), and the steps' share of
	// peak should not rest on one slow moment.
	before := MeasurePeak(256, 200)
	upd, err := sac.BenchUpdate(iters)
	if err != nil {
		return nil, err
	}
	var updFrom sac.Timing
	if trained != nil {
		if updFrom, err = sac.BenchUpdateFrom(trained.ckpt, trained.ObsDim, trained.ActDim, trained.sacConfig(), iters); err != nil {
			return nil, fmt.Errorf("bench train: %s: %w", from, err)
		}
	}
	adm, admFLOPs, err := dynamics.BenchADMTrainStep(iters)
	if err != nil {
		return nil, err
	}
	ens, ensFLOPs, err := dynamics.BenchEnsembleTrainStep(iters)
	if err != nil {
		return nil, err
	}
	after := MeasurePeak(256, 200)
	peak := before.Higher(after)
	t := &Table{Title: "admpo bench train: median ms per step (lower is better); ratio = admpo / PyTorch",
		Header:  machine(),
		Columns: []string{"computation", "admpo ms", "GFLOP/s", "% of peak", "PyTorch ms", "ratio"}}
	t.Header["cpu kernels"] = fmt.Sprintf("%v (best on this CPU: %v)", cpukern.Active(), cpukern.Detected())
	t.Header["product peak, 1 thread"] = fmt.Sprintf("%.1f GFLOP/s (256^3, best of 200 before and of 200 after the steps; cpukern %v %.1f (%.1f before, %.1f after), OpenBLAS %.1f (%.1f, %.1f))",
		peak.Best(), peak.Path, peak.CPUKern, before.CPUKern, after.CPUKern, peak.OpenBLAS, before.OpenBLAS, after.OpenBLAS)
	var pt *TorchTrain
	if torch {
		if pt, err = RunTorchTrain(iters, torchThreads); err != nil {
			t.Notes = append(t.Notes, err.Error())
			pt = nil
		} else {
			t.Header["torch"] = fmt.Sprintf("%s, %d threads", pt.Version, pt.Threads)
		}
	}
	row := func(name string, ours, flops float64, theirs func(*TorchTrain) float64) {
		r := []any{name, ours, nil, nil, nil, nil}
		if flops > 0 {
			g := flops / ours / 1e6
			r[2], r[3] = g, 100*g/peak.Best()
		}
		if pt != nil && theirs != nil {
			v := theirs(pt)
			r[4], r[5] = v, ours/v
		}
		t.Rows = append(t.Rows, r)
	}
	row("SAC critic update (batch 256, 256x256, obs 11, act 3)", upd.Target+upd.Critic, 0, func(p *TorchTrain) float64 { return p.CriticMS })
	row("SAC actor + alpha + Polyak", upd.Actor+upd.Other, 0, func(p *TorchTrain) float64 { return p.ActorMS })
	row("SAC update total", upd.Total, upd.FLOPs, func(p *TorchTrain) float64 { return p.CriticMS + p.ActorMS })
	if trained != nil {
		row(fmt.Sprintf("SAC update total, the agent of %s (obs %d, act %d, %v, batch %d; after %d updates)",
			trained.name, trained.ObsDim, trained.ActDim, trained.Hidden, trained.Batch, trained.updates),
			updFrom.Total, updFrom.FLOPs, nil)
		if trained.sameSizes() {
			t.Notes = append(t.Notes, fmt.Sprintf("the trained agent's update takes %.2fx the fresh agent's (same sizes, same random batch)", updFrom.Total/upd.Total))
		}
	}
	row("ADM train step (m 5, batch 256, 3x200 GRU, 4 ResBlocks)", adm, admFLOPs, func(p *TorchTrain) float64 { return p.ADMStepMS })
	row("ensemble train step (7x 4x200 Swish, batch 256 each, MBPO/MOPO)", ens, ensFLOPs, nil)
	t.Notes = append(t.Notes, fmt.Sprintf("%d timed iterations each, medians", iters),
		fmt.Sprintf("GFLOP/s counts the matrix products only (SAC update %.3f GFLOP, ADM step %.3f GFLOP, ensemble step %.3f GFLOP); %% of peak is against the product peak above; PyTorch has no ensemble step here",
			upd.FLOPs/1e9, admFLOPs/1e9, ensFLOPs/1e9))
	return t, nil
}

// trainedRun is what Train needs of a run directory to time its agent.
type trainedRun struct {
	Batch     int   `json:"batch"`
	AutoAlpha *bool `json:"auto_alpha"`
	ObsDim    int
	ActDim    int
	Hidden    []int
	name      string
	ckpt      *ckpt.File
	updates   int
}

// loadTrainedRun reads dir's checkpoint.ckpt (the agent and its sizes: the
// actor's layers) and config.json (batch size, whether α is tuned).
func loadTrainedRun(dir string) (*trainedRun, error) {
	d := rundir.Dir(dir)
	b, err := os.ReadFile(d.Config())
	if err != nil {
		return nil, fmt.Errorf("bench train: --from %s: not a run directory: %w", dir, err)
	}
	r := &trainedRun{name: filepath.Base(filepath.Clean(dir))}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("bench train: --from %s: config.json: %w", dir, err)
	}
	if r.Batch <= 0 {
		return nil, fmt.Errorf("bench train: --from %s: config.json names no SAC batch size", dir)
	}
	if r.ckpt, err = ckpt.Load(d.Checkpoint()); err != nil {
		return nil, fmt.Errorf("bench train: --from %s: %w", dir, err)
	}
	u, err := r.ckpt.F32("sac/updates", 1)
	if err != nil {
		return nil, fmt.Errorf("bench train: --from %s: the checkpoint holds no SAC agent (a BC run?): %w", dir, err)
	}
	r.updates = int(u[0])
	// The actor's layers: biases of the hidden sizes, then 2·act outputs
	// (mean and log-std); the first weight matrix is obs x hidden[0].
	var sizes []int
	for l := 0; ; l++ {
		b, err := r.ckpt.F32(fmt.Sprintf("sac/actor/%d/b", l), -1)
		if err != nil {
			break
		}
		sizes = append(sizes, len(b))
	}
	w0, err := r.ckpt.F32("sac/actor/0/w", -1)
	if len(sizes) < 2 || err != nil || sizes[len(sizes)-1]%2 != 0 || len(w0)%sizes[0] != 0 {
		return nil, fmt.Errorf("bench train: --from %s: the checkpoint's actor layers (%v) are not a SAC actor's", dir, sizes)
	}
	r.Hidden, r.ActDim, r.ObsDim = sizes[:len(sizes)-1], sizes[len(sizes)-1]/2, len(w0)/sizes[0]
	return r, nil
}

// sacConfig is sac's default configuration at the run's sizes.
func (r *trainedRun) sacConfig() sac.Config {
	c := sac.DefaultConfig(r.ActDim)
	c.Hidden, c.BatchSize = r.Hidden, r.Batch
	if r.AutoAlpha != nil {
		c.AutoAlpha = *r.AutoAlpha
	}
	return c
}

// sameSizes reports whether the run's agent has the fresh benchmark's sizes.
func (r *trainedRun) sameSizes() bool {
	return r.ObsDim == 11 && r.ActDim == 3 && r.Batch == 256 && len(r.Hidden) == 2 && r.Hidden[0] == 256 && r.Hidden[1] == 256
}
