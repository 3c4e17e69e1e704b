package train

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/rundir"
)

// fitResumeConfig is a tiny offline run of algo whose model fit takes five
// epochs of several Adam steps each, so that it can be stopped inside.
func fitResumeConfig(t *testing.T, algo, data string) OfflineConfig {
	cfg := Fixtures.TinyOfflineConfig(t, algo, "medium-replay", data)
	cfg.ModelMaxEpochs, cfg.ModelPatience, cfg.ModelEpochPasses = 5, 5, 2
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestOfflineFitInterruptResumesExactly interrupts offline ADMPO and MOPO
// runs (and a MOPO run on emu: SAC and the ensemble's fit on the device)
// inside their model fit (one Adam step into epoch 3, then, once
// resumed, inside epoch 4) and, separately, "kills" one right after the
// fit's periodic checkpoint before epoch 3 (the run directory is copied
// then). Each resumed run must continue the fit where it stood and end
// identical to an uninterrupted run: the fitted model, SAC's weights, the
// model buffer, and progress.csv, offline.csv and model_fit.csv apart from
// their wall-clock columns.
func TestOfflineFitInterruptResumesExactly(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	for _, c := range []struct{ algo, device string }{{"admpo", ""}, {"mopo", ""}, {"mopo", "emu"}} {
		algo, name := c.algo, c.algo
		cfg := fitResumeConfig(t, algo, data)
		if c.device != "" {
			cfg.Device, name = c.device, algo+"-"+c.device
		}
		wantDir, want := offStraightRun(t, cfg)
		if want.dyn == nil {
			t.Fatalf("%s: the run has no model", algo)
		}
		t.Run(name+"/interrupt", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			o, err := NewOffline(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			if first := stopIn(t, o, 3); first != 1 {
				t.Fatalf("the fresh fit reported epoch %d first", first)
			}
			c := resumed(t, ResumeOffline, dir)
			if c.fitted || c.step != 0 || c.FitInterruptedAt() != 3 {
				t.Fatalf("resumed fitted %v at update %d, fit at epoch %d; want an unfinished fit at epoch 3", c.fitted, c.step, c.FitInterruptedAt())
			}
			if first := stopIn(t, c, 4); first != 3 {
				t.Fatalf("the resumed fit reported epoch %d first, want 3: it did not continue", first)
			}
			c = resumed(t, ResumeOffline, dir)
			if first := finish(t, c); first != 4 {
				t.Fatalf("the fit resumed again reported epoch %d first, want 4", first)
			}
			offSameRun(t, offCapture(c), want)
			sameLogs(t, dir, wantDir)
		})
		t.Run(name+"/kill", func(t *testing.T) {
			dir, killed := filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "killed")
			o, err := NewOffline(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			o.FitCheckpointEvery = 0
			copied := false
			o.OnStatus(func(s Status) {
				if s.Message == "model fit: checkpoint written before epoch 3" {
					if err := os.CopyFS(killed, os.DirFS(dir)); err != nil {
						t.Error(err)
					}
					copied = true
				}
			})
			if err := o.Run(context.Background()); err != nil || !copied {
				t.Fatalf("Run: %v, directory copied at the checkpoint %v", err, copied)
			}
			o.Close()
			c := resumed(t, ResumeOffline, killed)
			if c.fitted || c.FitInterruptedAt() != 3 {
				t.Fatalf("resumed fitted %v, fit at epoch %d; want an unfinished fit at epoch 3", c.fitted, c.FitInterruptedAt())
			}
			if first := finish(t, c); first != 3 {
				t.Fatalf("the resumed fit reported epoch %d first, want 3: it did not continue", first)
			}
			offSameRun(t, offCapture(c), want)
			sameLogs(t, killed, wantDir)
		})
	}
}

// stopIn runs o until it is interrupted one Adam step into model fit
// epoch `epoch` (armed when the epoch before it is reported), checks that
// the run says where the fit stood, and closes o; it returns the first fit
// epoch the run reported.
func stopIn(t *testing.T, o *Offline, epoch int) (first int) {
	t.Helper()
	defer o.Close()
	ctx := newTripCtx()
	o.OnStatus(func(s Status) {
		if e := fitEpochOf(s); e > 0 && first == 0 {
			first = e
		}
		if fitEpochOf(s) == epoch-1 {
			ctx.arm(1)
		}
	})
	if err := o.Run(ctx); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run: %v, want ErrInterrupted in fit epoch %d", err, epoch)
	}
	if got := o.FitInterruptedAt(); got != epoch || o.fitted {
		t.Fatalf("interrupted in fit epoch %d (fitted %v), want %d", got, o.fitted, epoch)
	}
	return first
}

// finish runs o to its end and returns the first fit epoch it reported.
func finish(t *testing.T, o *Offline) (first int) {
	t.Helper()
	o.OnStatus(func(s Status) {
		if e := fitEpochOf(s); e > 0 && first == 0 {
			first = e
		}
	})
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return first
}

// fitEpochOf is the epoch a "model fit epoch E ..." status reports (0: none).
func fitEpochOf(s Status) int {
	rest, ok := strings.CutPrefix(s.Message, "model fit epoch ")
	if !ok {
		return 0
	}
	e, _ := strconv.Atoi(strings.TrimSuffix(strings.Fields(rest)[0], ":"))
	return e
}

// sameLogs fails t unless the run directories' progress.csv, offline.csv
// and model_fit.csv hold the same rows, wall_s columns apart.
func sameLogs(t *testing.T, got, want string) {
	t.Helper()
	for _, name := range []string{"progress.csv", rundir.OfflineLogFile, rundir.ModelFitFile} {
		g, w := csvNoWall(t, filepath.Join(got, name)), csvNoWall(t, filepath.Join(want, name))
		if len(w) < 2 {
			t.Fatalf("%s: %d rows in the uninterrupted run", name, len(w))
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s differs from the uninterrupted run's:\n got %q\nwant %q", name, g, w)
		}
	}
}

// csvNoWall reads a CSV log with its wall_s column emptied.
func csvNoWall(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s is empty", path)
	}
	if i := slices.Index(rows[0], "wall_s"); i >= 0 {
		for _, r := range rows[1:] {
			r[i] = ""
		}
	}
	return rows
}

// TestOfflineFitResumeFromOldCheckpoint: a checkpoint written inside the
// model fit by an admpo without fit snapshots (no "fit" section, no
// FitEpoch in the state; its random sources and model from before the fit)
// still resumes: the fit starts afresh and the run ends identical to an
// uninterrupted one.
func TestOfflineFitResumeFromOldCheckpoint(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := fitResumeConfig(t, "admpo", Fixtures.RandomHopperFile(t, 600))
	wantDir, want := offStraightRun(t, cfg)
	dir := filepath.Join(t.TempDir(), "b")
	o, err := NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	stopIn(t, o, 3)
	path := rundir.Dir(dir).Checkpoint()
	f, err := ckpt.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	old := ckpt.New()
	for _, name := range f.Names() {
		switch b, err := f.Bytes(name); {
		case name == fitSection:
		case name == "state":
			var st map[string]any
			if err := json.Unmarshal(b, &st); err != nil || st["FitEpoch"] != 3.0 {
				t.Fatalf("state %s (%v): want FitEpoch 3", b, err)
			}
			delete(st, "FitEpoch")
			if b, err = json.Marshal(st); err != nil {
				t.Fatal(err)
			}
			old.PutBytes(name, b)
		case err == nil:
			old.PutBytes(name, b)
		default:
			v, err := f.F32(name, -1)
			if err != nil {
				t.Fatal(err)
			}
			old.PutF32(name, v)
		}
	}
	if slices.Contains(old.Names(), fitSection) || len(old.Names()) != len(f.Names())-1 {
		t.Fatalf("sections %v from %v", old.Names(), f.Names())
	}
	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}
	c := resumed(t, ResumeOffline, dir)
	if c.fitted || c.FitInterruptedAt() != 0 {
		t.Fatalf("resumed fitted %v, fit snapshot at epoch %d; want a fit to start afresh", c.fitted, c.FitInterruptedAt())
	}
	if first := finish(t, c); first != 1 {
		t.Fatalf("the fit started at epoch %d, want 1", first)
	}
	offSameRun(t, offCapture(c), want)
	sameLogs(t, dir, wantDir)
}
