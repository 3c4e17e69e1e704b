package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/rundir"
)

// ExportBundle assembles a deployable bundle from a finished run directory
// of any kind (see OpenRunDir), returned with the run: online
// (admpo/mbpo/sac), offline on a task's data set (admpo/mopo/bc) or offline
// on data without a task. The manifest records the task (the data set's
// name without a task), the algorithm as "<algo>-on" or "<algo>-off", the
// run kind and the action bounds the actor squashes into. For ADMPO runs
// with a fitted ADM, U^ADM is calibrated on samples histories drawn from
// the run's real data: the online run's real replay buffer, or the offline
// run's data set (which must still hold the data the run trained on). The
// bundle is completed (checksums, dims) but not written: see
// policies.WriteBundle.
func ExportBundle(dir string, samples int) (*policies.Bundle, *Run, error) {
	if samples <= 0 {
		return nil, nil, fmt.Errorf("train: export: %d calibration samples (want > 0)", samples)
	}
	run, err := OpenRunDir(dir)
	if err != nil {
		return nil, nil, err
	}
	prov := map[string]string{"run": dir, "exported": time.Now().UTC().Format(time.RFC3339)}
	var (
		task, preset string
		seed         int64
		low, high    []float64
		histories    func() (*buffer.Replay, error)
	)
	if c := run.Offline; c != nil {
		task, preset, seed = c.Env, c.Preset, c.Seed
		prov["updates"] = strconv.Itoa(run.Step)
		prov["dataset"] = c.Dataset
		if c.Name != "" {
			prov["dataset_name"] = c.Name
		}
		if run.Kind == KindOwnData {
			task = c.Name
			low, high = c.ActionLow, c.ActionHigh
			if len(low) == 0 {
				return nil, nil, fmt.Errorf("train: %s/%s: an offline run without a task records no action bounds", dir, rundir.ConfigFile)
			}
		}
		if l, h, err := ownEnvBounds(c.Remote, c.EnvFile, c.EnvDigest, c.Task, prov); err != nil {
			return nil, nil, err
		} else if l != nil {
			low, high = l, h
		}
		histories = func() (*buffer.Replay, error) {
			d, err := datasets.ReadD4RL(c.Dataset)
			if err != nil {
				return nil, fmt.Errorf("train: export: the run's data set (for the U^ADM calibration): %w", err)
			}
			if run.dataN != 0 && (d.N != run.dataN || datasetSum(d) != run.dataSum) {
				return nil, fmt.Errorf("train: export: the data set %s changed since the run trained on it (%d transitions, checksum %08x; now %d, %08x)",
					c.Dataset, run.dataN, run.dataSum, d.N, datasetSum(d))
			}
			if d.ObsDim != c.ObsDim && c.ObsDim != 0 || d.ActDim != c.ActDim && c.ActDim != 0 {
				return nil, fmt.Errorf("train: export: the data set %s has %d/%d observation/action values, the run %d/%d",
					c.Dataset, d.ObsDim, d.ActDim, c.ObsDim, c.ActDim)
			}
			return buffer.FromDataset(d, seed)
		}
	} else {
		c := run.Online
		task, preset, seed = c.Env, c.Preset, c.Seed
		prov["env_steps"] = strconv.Itoa(run.Step)
		histories = run.Real
		if low, high, err = ownEnvBounds(c.Remote, c.EnvFile, c.EnvDigest, c.Task, prov); err != nil {
			return nil, nil, err
		}
	}
	if run.Algo == "" {
		return nil, nil, fmt.Errorf("train: %s/%s names no algorithm", dir, rundir.ConfigFile)
	}
	if low == nil {
		e, err := envs.Make(task)
		if err != nil {
			return nil, nil, fmt.Errorf("train: export: %w", err)
		}
		low, high = e.ActionLow(), e.ActionHigh()
		e.Close()
	}
	prov["seed"] = strconv.FormatInt(seed, 10)
	if preset != "" {
		prov["preset"] = preset
	}
	suffix := "-on"
	if run.Kind != KindOnline {
		suffix = "-off"
	}
	b := &policies.Bundle{Policy: run.Policy, Manifest: policies.Manifest{
		Task: task, Algorithm: run.Algo + suffix, RunKind: run.Kind, ActLow: low, ActHigh: high, Provenance: prov}}
	if run.Algo != "admpo" || run.ADM == nil {
		return b, run, b.Complete() // no ADM (mbpo/mopo's ensemble does not serve as a monitor)
	}
	b.ADM = run.ADM
	if err := b.Complete(); err != nil {
		return nil, nil, err
	}
	hist, err := histories()
	if err != nil {
		return nil, nil, err
	}
	if b.Manifest.Calibration, err = CalibrateUADM(b, hist, samples, seed); err != nil {
		return nil, nil, err
	}
	return b, run, b.Complete()
}

// CalibrateUADM measures U^ADM with b's ADM on n histories of up to m real
// states sampled from hist (never crossing an episode end) and returns its
// percentiles. Histories of one state (nothing to compare) are left out.
func CalibrateUADM(b *policies.Bundle, hist *buffer.Replay, n int, seed int64) (*policies.Calibration, error) {
	p, err := policies.OpenBundle(b, policies.Options{Sessions: 1})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	mon, err := p.Monitor()
	if err != nil {
		return nil, err
	}
	obs, acts, lens, err := hist.Windows(n, mon.M(), rand.New(rand.NewSource(seed)))
	if err != nil {
		return nil, err
	}
	od, ad := hist.ObsDim, hist.ActDim
	us := make([]float64, 0, len(lens))
	for i, at := 0, 0; i < len(lens); i++ {
		l := lens[i]
		rd, err := mon.Uncertainty(obs[at*od:(at+l)*od], acts[at*ad:(at+l)*ad])
		if err != nil {
			return nil, err
		}
		at += l
		if rd.K > 1 {
			us = append(us, rd.U)
		}
	}
	if len(us) == 0 {
		return nil, errors.New("train: export: no sampled history has two states or more (episodes of one step?): U^ADM cannot be calibrated")
	}
	cal, err := policies.Calibrate(us)
	if err != nil {
		return nil, err
	}
	cal.Range = obsRange(hist)
	return cal, nil
}

// obsRange is the range of every observation and next observation in hist
// (the data the ADM was trained on), which the monitor checks inputs
// against.
func obsRange(hist *buffer.Replay) *policies.InputRange {
	od := hist.ObsDim
	r := &policies.InputRange{ObsLow: make([]float64, od), ObsHigh: make([]float64, od)}
	for j := range od {
		r.ObsLow[j], r.ObsHigh[j] = math.Inf(1), math.Inf(-1)
	}
	for k := range hist.Len() {
		t := hist.At(k)
		for _, o := range [][]float32{t.Obs, t.NextObs} {
			for j, x := range o {
				r.ObsLow[j], r.ObsHigh[j] = min(r.ObsLow[j], float64(x)), max(r.ObsHigh[j], float64(x))
			}
		}
	}
	return r
}

// ownEnvBounds are the action bounds of a run on a remote environment
// (the spec its config records: the server need not be running) or on a
// task file's task (which it records in prov); nil for a built-in task.
func ownEnvBounds(r *RemoteEnv, file, digest string, task func() (*envs.Task, error), prov map[string]string) (low, high []float64, err error) {
	switch {
	case r != nil:
		return r.ActionLow, r.ActionHigh, nil
	case file != "":
		prov["env_file"], prov["env_file_sha256"] = file, digest
		return taskFileBounds(task())
	}
	return nil, nil, nil
}

// taskFileBounds are the action bounds of a run's task file's task (t,
// err from the run config's Task).
func taskFileBounds(t *envs.Task, err error) (low, high []float64, _ error) {
	if err != nil {
		return nil, nil, fmt.Errorf("train: export: %w", err)
	}
	e, err := envs.MakeTask(t)
	if err != nil {
		return nil, nil, fmt.Errorf("train: export: %w", err)
	}
	defer e.Close()
	return e.ActionLow(), e.ActionHigh(), nil
}
