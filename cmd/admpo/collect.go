package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/train"
)

func init() {
	register(&command{name: "collect", summary: "collect a D4RL-style offline data set (random, medium, expert, ...)", run: runCollect})
}

// behaviourSource is where medium and expert policies come from: a
// behaviour run (snapshots.json) or a plain `admpo train online` run.
type behaviourSource struct {
	dir string
	log *train.BehaviourLog // nil for a plain online run
}

// policyFor returns the ONNX actor, its description and measured return
// for kind "medium" or "expert", and the env step it was taken at.
func (b behaviourSource) policyFor(kind string, mediumReturn float64) (onnxBytes []byte, desc string, step int, err error) {
	if b.log == nil {
		p, err := os.ReadFile(filepath.Join(b.dir, "policy.onnx"))
		if err != nil {
			return nil, "", 0, fmt.Errorf("%s has no policy.onnx (did the run finish?): %w", b.dir, err)
		}
		info, err := train.OpenRun(b.dir)
		if err != nil {
			return nil, "", 0, err
		}
		return p, fmt.Sprintf("%s/policy.onnx (final policy of an online run, env step %d)", b.dir, info.Step), info.Step, nil
	}
	best, err := b.log.Best()
	if err != nil {
		return nil, "", 0, err
	}
	s := best
	if kind == "medium" {
		target := mediumReturn
		if target <= 0 {
			target = best.EvalReturn / 3
		}
		if s, err = b.log.Medium(target); err != nil {
			return nil, "", 0, err
		}
	}
	p, err := os.ReadFile(filepath.Join(b.dir, s.File))
	if err != nil {
		return nil, "", 0, err
	}
	return p, fmt.Sprintf("%s/%s (SAC snapshot at env step %d, eval return %.1f; best snapshot %.1f at step %d)",
		b.dir, s.File, s.Step, s.EvalReturn, best.EvalReturn, best.Step), s.Step, nil
}

func runCollect(args []string) error {
	fs := newFlags("collect", "collect --env hopper --kind medium --size 50000 --out data/hopper-medium.hdf5",
		"Writes a D4RL-layout HDF5 data set (observations, actions, rewards, next_observations, terminals,\n"+
			"timeouts at 1000 steps, infos/qpos and infos/qvel, metadata/*) for one kind:\n"+
			"  random         uniform random actions\n"+
			"  medium, expert a SAC policy: from --policy DIR, or from a SAC behaviour run that this command\n"+
			"                 trains (or reuses) in --train-dir: one update per env step, a deterministic\n"+
			"                 evaluation and an ONNX snapshot every 5000 steps; expert = the best snapshot,\n"+
			"                 medium = the snapshot whose return is closest to a third of it (--medium-return)\n"+
			"  medium-replay  that run's replay buffer up to the medium snapshot (all of it for an online run)\n"+
			"  medium-expert  medium then expert, --size/2 transitions each\n"+
			"The policy acts stochastically (SAC samples) unless --deterministic. Its mean deterministic return\n"+
			"(--eval-episodes) and the data's mean episode return are stored in the metadata with the command.")
	env := fs.String("env", "hopper", "task (see: admpo envs list)")
	kind := fs.String("kind", "random", strings.Join(train.DatasetKinds, ", "))
	size := fs.Int("size", 50000, "transitions (medium-replay: cap, keeping the newest; 0: all)")
	out := fs.String("out", "", "output .hdf5 file (default data/ENV-KIND.hdf5)")
	seed := fs.Int64("seed", 0, "seed of the env, the policy noise and the behaviour run")
	policy := fs.String("policy", "", "run directory with the behaviour policy (a --train-dir, or an `admpo train online` run)")
	trainDir := fs.String("train-dir", "", "behaviour SAC run directory to train or reuse (default OUTDIR/behaviour-ENV-SEED)")
	trainSteps := fs.Int("train-steps", 100000, "env steps of the behaviour SAC run")
	trainWarm := fs.Int("train-warmup", 5000, "uniform random steps at the start of the behaviour run")
	trainEvery := fs.Int("train-eval-every", 5000, "env steps between the behaviour run's evaluations and snapshots")
	stopReturn := fs.Float64("stop-return", 0, "stop the behaviour run once an evaluation reaches this return (0: never)")
	mediumReturn := fs.Float64("medium-return", 0, "target return of the medium snapshot (default: a third of the best snapshot's)")
	deterministic := fs.Bool("deterministic", false, "act with the policy's mean action instead of samples")
	evalEps := fs.Int("eval-episodes", 10, "deterministic episodes to measure the policy's return")
	bound(fs, nonNeg, "size", "train-warmup", "stop-return", "medium-return")
	bound(fs, atLeast1, "train-steps", "train-eval-every", "eval-episodes")
	bound(fs, anyNum, "seed")
	if err := parse(fs, args); err != nil {
		return err
	}
	task, err := envs.Lookup(*env)
	if err != nil {
		return usageErr(err)
	}
	known := false
	for _, k := range train.DatasetKinds {
		known = known || k == *kind
	}
	if !known {
		return fmt.Errorf("%w: --kind %q is not one of %s", errUsage, *kind, strings.Join(train.DatasetKinds, ", "))
	}
	if *size < 0 || (*size == 0 && *kind != "medium-replay") {
		return fmt.Errorf("%w: --size %d must be positive", errUsage, *size)
	}
	path := *out
	if path == "" {
		path = filepath.Join("data", fmt.Sprintf("%s-%s.hdf5", task.Name, *kind))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	meta := map[string]string{"env": task.Name, "kind": *kind, "seed": strconv.FormatInt(*seed, 10),
		"command": "admpo " + strings.Join(append([]string{"collect"}, args...), " "),
		"name":    task.Name + "-" + *kind}
	var d *datasets.Dataset
	if *kind == "random" {
		env0, err := envs.Make(task.Name)
		if err != nil {
			return err
		}
		u := train.UniformPolicy{Low: env0.ActionLow(), High: env0.ActionHigh()}
		env0.Close()
		var st train.CollectStats
		if d, st, err = train.CollectDataset(task.Name, *size, *seed, u); err != nil {
			return err
		}
		meta["policy"] = "uniform random actions"
		meta["policy_return"] = ff(st.MeanReturn)
		meta["data_return"] = ff(st.MeanReturn)
		meta["data_episodes"] = strconv.Itoa(st.Episodes)
	} else {
		bc := train.DefaultBehaviourConfig(task.Name, *seed, *trainSteps)
		bc.WarmUp, bc.EvalEvery, bc.StopReturn = *trainWarm, *trainEvery, *stopReturn
		src, err := behaviour(*policy, *trainDir, path, bc)
		if err != nil {
			return err
		}
		collect := func(k string, n int, seedOff int64) (*datasets.Dataset, error) {
			b, desc, _, err := src.policyFor(k, *mediumReturn)
			if err != nil {
				return nil, err
			}
			p, err := infer.OpenPolicy(b, infer.Options{})
			if err != nil {
				return nil, err
			}
			defer p.Close()
			det := &train.ONNXPolicy{P: p, Deterministic: true}
			ret, retStd, err := train.EvalPolicy(task.Name, det, *evalEps, *seed*1000+500+seedOff)
			if err != nil {
				return nil, err
			}
			fmt.Printf("%s policy: %s\n  deterministic return over %d episodes: %.1f ± %.1f\n", k, desc, *evalEps, ret, retStd)
			pd, st, err := train.CollectDataset(task.Name, n, *seed*1000+seedOff, &train.ONNXPolicy{P: p, Deterministic: *deterministic})
			if err != nil {
				return nil, err
			}
			fmt.Printf("  collected %d transitions, %d complete episodes, mean episode return %.1f, mean length %.0f\n",
				st.Transitions, st.Episodes, st.MeanReturn, st.MeanLength)
			pre := ""
			if *kind == "medium-expert" {
				pre = k + "_"
			}
			meta[pre+"policy"] = desc
			meta[pre+"policy_return"] = ff(ret)
			meta[pre+"policy_return_std"] = ff(retStd)
			meta[pre+"data_return"] = ff(st.MeanReturn)
			meta[pre+"data_episodes"] = strconv.Itoa(st.Episodes)
			return pd, nil
		}
		switch *kind {
		case "medium", "expert":
			if d, err = collect(*kind, *size, 0); err != nil {
				return err
			}
		case "medium-expert":
			md, err := collect("medium", *size/2, 0)
			if err != nil {
				return err
			}
			ed, err := collect("expert", *size-*size/2, 1)
			if err != nil {
				return err
			}
			if d, err = train.ConcatDatasets(md, ed); err != nil {
				return err
			}
		case "medium-replay":
			if d, err = mediumReplay(src, *size, *mediumReturn, meta); err != nil {
				return err
			}
		}
	}
	d.Meta = meta
	if err := datasets.WriteD4RL(path, d); err != nil {
		return err
	}
	eps := d.Episodes()
	fmt.Printf("wrote %s: %d transitions, %d episodes (%s)\n", path, d.N, len(eps), meta["name"])
	return nil
}

// mediumReplay is the behaviour run's replay buffer up to the medium
// snapshot (a plain online run: all of it), capped at size keeping the
// newest transitions from an episode start.
func mediumReplay(src behaviourSource, size int, mediumReturn float64, meta map[string]string) (*datasets.Dataset, error) {
	info, err := train.OpenRun(src.dir)
	if err != nil {
		return nil, err
	}
	_, desc, step, err := src.policyFor("medium", mediumReturn)
	if err != nil {
		return nil, err
	}
	d, err := train.DatasetFromReplay(info.Real, step)
	if err != nil {
		return nil, err
	}
	if size > 0 && size < d.N {
		d = tailFromEpisodeStart(d, size)
	}
	meta["policy"] = "replay buffer of the behaviour run up to " + desc
	var sum float64
	eps := d.Episodes()
	for _, e := range eps {
		for i := e.Start; i < e.End; i++ {
			sum += float64(d.Rew[i])
		}
	}
	meta["data_return"] = ff(sum / float64(len(eps)))
	meta["data_episodes"] = strconv.Itoa(len(eps))
	fmt.Printf("medium-replay: the first %d transitions of %s's replay buffer -> %d kept\n", step, src.dir, d.N)
	return d, nil
}

// tailFromEpisodeStart keeps at most n of the newest rows, starting at an
// episode start.
func tailFromEpisodeStart(d *datasets.Dataset, n int) *datasets.Dataset {
	from := d.N - n
	for _, e := range d.Episodes() {
		if e.Start >= from {
			from = e.Start
			break
		}
	}
	od, ad := d.ObsDim, d.ActDim
	return &datasets.Dataset{ObsDim: od, ActDim: ad, N: d.N - from, Meta: d.Meta,
		Obs: d.Obs[from*od:], Act: d.Act[from*ad:], Rew: d.Rew[from:], NextObs: d.NextObs[from*od:],
		Terminal: d.Terminal[from:], Timeout: d.Timeout[from:]}
}

// behaviour opens --policy, or trains (or reuses) the behaviour SAC run.
func behaviour(policy, trainDir, out string, bc train.BehaviourConfig) (behaviourSource, error) {
	if policy != "" {
		if l, err := train.ReadBehaviourLog(policy); err == nil {
			return behaviourSource{dir: policy, log: l}, nil
		}
		return behaviourSource{dir: policy}, nil
	}
	dir := trainDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(out), fmt.Sprintf("behaviour-%s-%d", bc.Env, bc.Seed))
	}
	if l, err := train.ReadBehaviourLog(dir); err == nil && l.Done {
		fmt.Printf("reusing the behaviour run in %s (%s)\n", dir, l.Reason)
		return behaviourSource{dir: dir, log: l}, nil
	}
	fmt.Printf("training the behaviour SAC run in %s (%d env steps at most; Ctrl-C checkpoints, rerun to resume)\n", dir, bc.Steps)
	ctx, stop := interruptible()
	defer stop()
	l, err := train.TrainBehaviour(ctx, bc, dir, statusPrinter(bc.Steps, 0))
	if errors.Is(err, train.ErrInterrupted) {
		return behaviourSource{}, fmt.Errorf("behaviour run interrupted (checkpoint written in %s; rerun to resume): %w", dir, err)
	}
	if err != nil {
		return behaviourSource{}, err
	}
	fmt.Printf("behaviour run done: %s\n", l.Reason)
	return behaviourSource{dir: dir, log: l}, nil
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
