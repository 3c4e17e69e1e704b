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

// Train measures admpo's SAC update and ADM train step and, when torch is
// true, the same computations in PyTorch, and returns the table of ratios.
func Train(iters int, torch bool, torchThreads int) (*Table, error) {
	upd, err := sac.BenchUpdate(iters)
	if err != nil {
		return nil, err
	}
	adm, err := dynamics.BenchADMTrainStep(iters)
	if err != nil {
		return nil, err
	}
	t := &Table{Title: "admpo bench train: median ms per step (lower is better); ratio = admpo / PyTorch",
		Header:  machine(),
		Columns: []string{"computation", "admpo ms", "PyTorch ms", "ratio"}}
	var pt *TorchTrain
	if torch {
		if pt, err = RunTorchTrain(iters, torchThreads); err != nil {
			t.Notes = append(t.Notes, err.Error())
			pt = nil
		} else {
			t.Header["torch"] = fmt.Sprintf("%s, %d threads", pt.Version, pt.Threads)
		}
	}
	row := func(name string, ours float64, theirs func(*TorchTrain) float64) {
		if pt == nil {
			t.Rows = append(t.Rows, []any{name, ours, nil, nil})
			return
		}
		v := theirs(pt)
		t.Rows = append(t.Rows, []any{name, ours, v, ours / v})
	}
	row("SAC critic update (batch 256, 256x256, obs 11, act 3)", upd.Target+upd.Critic, func(p *TorchTrain) float64 { return p.CriticMS })
	row("SAC actor + alpha + Polyak", upd.Actor+upd.Other, func(p *TorchTrain) float64 { return p.ActorMS })
	row("SAC update total", upd.Total, func(p *TorchTrain) float64 { return p.CriticMS + p.ActorMS })
	row("ADM train step (m 5, batch 256, 3x200 GRU, 4 ResBlocks)", adm, func(p *TorchTrain) float64 { return p.ADMStepMS })
	t.Notes = append(t.Notes, fmt.Sprintf("%d timed iterations each, medians", iters))
	return t, nil
}
