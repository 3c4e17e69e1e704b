package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// testdata/before-split holds runs written by admpo before train was split
// into buffer, sac and train (issue 18; commit ba23051):
//
//	admpo train online --env inverted-pendulum --algo admpo --preset quick --seed 0 --warmup 100 --steps 150
//	  --model-every 100 --eval-every 125 --eval-episodes 1 --rollout-batch 50 --model-max-epochs 2
//	  --updates-per-step 1 --hidden 16,16 --adm-hidden 8 --adm-layers 1 --adm-res-blocks 1 --batch 32
//	  --tensorboard=false --out online-admpo
//	admpo collect --env hopper --kind random --size 300 --seed 0 --workers 1 --out data/hopper-random.hdf5
//	admpo train offline --dataset data/hopper-random.hdf5 --algo bc --preset quick --seed 0 --epochs 2
//	  --steps-per-epoch 20 --hidden 16,16 --batch 32 --eval-episodes 1 --tensorboard=false --out offline-bc
//
// (config.json, checkpoint.ckpt and the progress logs only: no ONNX files,
// and the offline run's data set is not kept.)
const beforeSplit = "testdata/before-split"

// TestResumeRunWrittenBeforeSplit resumes the online run: its config.json
// and checkpoint config decode to the same config, the checkpoint written
// again right after the resume has every section (but the state, which
// holds wall-clock times) byte for byte as before, and the run continues.
func TestResumeRunWrittenBeforeSplit(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"config.json", rundir.CheckpointFile, "progress.csv", "progress.jsonl"} {
		b, err := os.ReadFile(filepath.Join(beforeSplit, "online-admpo", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := ckpt.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	o := resumed(t, ResumeOnline, dir)
	if o.step != 250 || o.model == nil || o.real.Len() != 250 || o.sac.Updates != 150 {
		t.Fatalf("resumed at step %d, %d real rows, model buffer %v, %d SAC updates; want 250, 250, present, 150",
			o.step, o.real.Len(), o.model != nil, o.sac.Updates)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fromFile OnlineConfig
	if err := json.Unmarshal(cj, &fromFile); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, o.Cfg) {
		t.Fatalf("config.json gives %+v, the checkpoint %+v", fromFile, o.Cfg)
	}
	if err := o.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	again, err := ckpt.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old.Names(), again.Names()) {
		t.Fatalf("sections %v, then %v", old.Names(), again.Names())
	}
	sameSections(t, old, again, "state")
	if err := o.SetSteps(o.Cfg.Steps + 50); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o.step != 300 {
		t.Fatalf("the resumed run stopped at step %d, want 300", o.step)
	}
}

// TestLoadOfflineCheckpointWrittenBeforeSplit loads the offline BC run's
// config and its SAC and BC sections (the data set is not kept, so the run
// itself cannot resume) and saves them again byte for byte.
func TestLoadOfflineCheckpointWrittenBeforeSplit(t *testing.T) {
	old, err := ckpt.Load(filepath.Join(beforeSplit, "offline-bc", rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := old.Bytes("config")
	if err != nil {
		t.Fatal(err)
	}
	var cfg OfflineConfig
	if err := json.Unmarshal(cb, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	env, err := envs.Make(cfg.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	low, high := env.ActionLow(), env.ActionHigh()
	ag, err := sac.New(cfg.ObsDim, low, high, cfg.sacConfig(low, high))
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	bc, err := sac.NewBC(ag.Actor, cfg.Batch, cfg.ActorLR)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if err := ag.Load(old); err != nil {
		t.Fatal(err)
	}
	if err := bc.Load(old); err != nil {
		t.Fatal(err)
	}
	if bc.Updates != 40 {
		t.Fatalf("%d BC updates, want 40", bc.Updates)
	}
	saved := ckpt.New()
	ag.Save(saved)
	bc.Save(saved)
	sameSections(t, old, saved)
}

// sameSections fails unless every section of b but those named in skip is
// in a with the same contents (float bits for tensors).
func sameSections(t *testing.T, a, b *ckpt.File, skip ...string) {
	t.Helper()
	for _, name := range b.Names() {
		if slices.Contains(skip, name) {
			continue
		}
		if bb, err := b.Bytes(name); err == nil {
			ab, err := a.Bytes(name)
			if err != nil || string(ab) != string(bb) {
				t.Errorf("section %s differs (%v)", name, err)
			}
			continue
		}
		bv, err := b.F32(name, -1)
		if err != nil {
			t.Fatal(err)
		}
		av, err := a.F32(name, len(bv))
		if err != nil {
			t.Errorf("section %s: %v", name, err)
			continue
		}
		if i := bitexact.Diff(av, bv); i >= 0 {
			t.Errorf("section %s differs at %d: %v, then %v", name, i, av[i], bv[i])
		}
	}
}
