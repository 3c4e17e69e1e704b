package train

import (
	"math"
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/sac"
)

// countingDevice counts a device's downloads (every read-back from it).
type countingDevice struct {
	device.Device
	downloads int
}

func (d *countingDevice) Download(dst []float32, src device.Buffer) error {
	d.downloads++
	return d.Device.Download(dst, src)
}

func (d *countingDevice) DownloadInt32(dst []int32, src device.Buffer) error {
	d.downloads++
	return d.Device.DownloadInt32(dst, src)
}

// withOldCarry is the loop's former bookkeeping: every update's stats as
// read back right after it, the last actor step's numbers kept over
// updates that skipped the actor.
func withOldCarry(st, prev sac.Stats) sac.Stats {
	if !st.ActorUpdated {
		st.ActorLoss, st.AlphaLoss, st.LogPi, st.ActorLR = prev.ActorLoss, prev.AlphaLoss, prev.LogPi, prev.ActorLR
	}
	return st
}

// TestDeviceStatsReadOnlyWhenAsked: updates on a device learner read
// nothing back; sac.Agent.LastStats reads the losses back once (and again
// only after another update), and gives what reading them after every
// update gave (actor_every 3, so that the last update may skip the actor).
func TestDeviceStatsReadOnlyWhenAsked(t *testing.T) {
	cfg := sac.DefaultConfig(3)
	cfg.Hidden, cfg.BatchSize, cfg.ActorEvery = []int{16, 16}, 32, 3
	low, high := []float64{-1, -2, -0.5}, []float64{1, 1, 1.5}
	agent := func() (*sac.Agent, *countingDevice) {
		a, err := sac.New(11, low, high, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		d := &countingDevice{Device: emu.New()}
		dl, err := newDevLearnerOn(d, "emu", a, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dl.Close() })
		return a, d
	}
	lazy, d := agent()
	eager, _ := agent()
	cpu, err := sac.New(11, low, high, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()

	var carried sac.Stats // eager's stats, kept as the loop kept them
	run := func(n int, seed int64) {
		t.Helper()
		rng := rand.New(rand.NewSource(seed))
		for range n {
			b := buffer.NewBatch(32, 11, 3)
			for _, v := range [][]float32{b.Obs, b.NextObs, b.Rew, b.Act} {
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.5)
				}
			}
			noise := rng.Int63()
			for _, a := range []*sac.Agent{lazy, eager, cpu} {
				a.SetRand(rand.New(rand.NewSource(noise)))
				if _, err := a.Update(b); err != nil {
					t.Fatal(err)
				}
			}
			st, err := eager.LastStats()
			if err != nil {
				t.Fatal(err)
			}
			carried = withOldCarry(st, carried)
		}
	}
	read := func(what string) sac.Stats {
		t.Helper()
		before := d.downloads
		st, err := lazy.LastStats()
		if err != nil {
			t.Fatal(err)
		}
		if d.downloads == before {
			t.Fatalf("%s: LastStats read nothing back", what)
		}
		reads := d.downloads - before
		if again, err := lazy.LastStats(); err != nil || again != st || d.downloads != before+reads {
			t.Fatalf("%s: a second LastStats read back %d more values (err %v)", what, d.downloads-before-reads, err)
		}
		if st != carried {
			t.Errorf("%s: lazy stats %+v, read after every update %+v", what, st, carried)
		}
		want, _ := cpu.LastStats()
		for _, x := range [][2]float64{{st.CriticLoss, want.CriticLoss}, {st.ActorLoss, want.ActorLoss},
			{st.AlphaLoss, want.AlphaLoss}, {st.LogPi, want.LogPi}, {st.Alpha, want.Alpha}, {st.Q1, want.Q1}} {
			if math.Abs(x[0]-x[1]) > 1e-4*math.Max(1, math.Abs(x[1])) {
				t.Errorf("%s: device stats %+v, CPU %+v", what, st, want)
				break
			}
		}
		if st.ActorLR != want.ActorLR || st.ActorUpdated != want.ActorUpdated {
			t.Errorf("%s: actor lr %v (updated %v), CPU %v (%v)", what, st.ActorLR, st.ActorUpdated, want.ActorLR, want.ActorUpdated)
		}
		return st
	}

	start := d.downloads
	run(7, 1) // update 7 skips the actor, 6 stepped it
	if d.downloads != start {
		t.Fatalf("7 updates read back %d values, want none", d.downloads-start)
	}
	first := d.downloads
	st := read("after 7 updates")
	perRead := d.downloads - first
	if st.ActorUpdated || st.ActorLoss == 0 {
		t.Errorf("after 7 updates: %+v, want update 6's actor numbers", st)
	}
	mark := d.downloads
	run(5, 2) // update 12 steps the actor
	if d.downloads != mark {
		t.Fatalf("5 more updates read back %d values, want none", d.downloads-mark)
	}
	if st := read("after 12 updates"); !st.ActorUpdated {
		t.Errorf("update 12 did not step the actor: %+v", st)
	}
	if got := d.downloads - mark; got != perRead {
		t.Errorf("the second read took %d downloads, the first %d", got, perRead)
	}
}

// countingLearner wraps a device learner, counting the loss read-backs
// and the agent's update count at each. eager reads the losses after every
// update, as the loop did before (the last actor step's numbers kept by
// the host), and hands out those.
type countingLearner struct {
	*devLearner
	agent   *sac.Agent
	eager   bool
	last    sac.Stats
	readsAt []int // agent updates at each Stats call
}

func (c *countingLearner) Update(b *buffer.Batch, epsNext, eps []float32, actorLR float64) (bool, error) {
	actor, err := c.devLearner.Update(b, epsNext, eps, actorLR)
	if err != nil || !c.eager {
		return actor, err
	}
	st, err := c.devLearner.Stats()
	if err != nil {
		return actor, err
	}
	if st.ActorUpdated {
		st.ActorLR = actorLR
	}
	c.last = withOldCarry(st, c.last)
	return actor, nil
}

func (c *countingLearner) Stats() (sac.Stats, error) {
	c.readsAt = append(c.readsAt, c.agent.Updates)
	if c.eager {
		return c.last, nil
	}
	return c.devLearner.Stats()
}

// TestDeviceRunReadsStatsOnlyWhenItReports: an online run on emu
// (actor_every 3, so that the updates before a report may skip the actor)
// reads SAC's losses back once per progress row (the checkpoint at the same
// step reuses them) and at no other update, and its progress rows and last
// stats equal those of the same run reading the losses after every update,
// as runs did before; its losses agree with the CPU run's but for rounding.
func TestDeviceRunReadsStatsOnlyWhenItReports(t *testing.T) {
	cfg := tinyConfig("sac")
	cfg.ActorEvery = 3
	type result struct {
		rows    []Record
		last    sac.Stats
		readsAt []int
	}
	run := func(device string, eager bool) result {
		t.Helper()
		cfg.Device = device
		dir := t.TempDir() + "/run"
		o, err := NewOnline(cfg, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		var c *countingLearner
		if o.dev != nil {
			c = &countingLearner{devLearner: o.dev, agent: o.sac, eager: eager}
			if err := o.sac.SetLearner(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
		if err != nil {
			t.Fatal(err)
		}
		r := result{rows: rows, last: o.lastSAC}
		if c != nil {
			r.readsAt = c.readsAt
		}
		return r
	}
	lazy := run("emu", false)
	// Rows at env steps 300 and 600: updates 100 and 400 (warm-up 200,
	// one update per step); each has a checkpoint at the same step.
	if want := []int{100, 400}; !reflect.DeepEqual(lazy.readsAt, want) {
		t.Errorf("losses read back after updates %v, want %v (one read per progress row)", lazy.readsAt, want)
	}
	if len(lazy.rows) != 2 || lazy.rows[0].Step != 300 || lazy.rows[1].Step != 600 {
		t.Fatalf("progress rows %+v, want steps 300 and 600", lazy.rows)
	}
	if lazy.last.ActorUpdated || lazy.last.ActorLoss == 0 || lazy.last.ActorLR == 0 {
		t.Errorf("last stats %+v: want update 400's (no actor step) with update 399's actor numbers", lazy.last)
	}
	eager := run("emu", true)
	if len(eager.readsAt) != 2 {
		t.Errorf("eager run: the agent asked for stats %d times, want 2", len(eager.readsAt))
	}
	if lazy.last != eager.last {
		t.Errorf("last stats: lazy %+v, read after every update %+v", lazy.last, eager.last)
	}
	same := func(a, b Record) bool { // every column but the wall time, as written
		a.Wall, b.Wall = 0, 0
		return reflect.DeepEqual(a.csvRow(), b.csvRow())
	}
	for i := range lazy.rows {
		if i >= len(eager.rows) || !same(lazy.rows[i], eager.rows[i]) {
			t.Errorf("progress row %d: lazy %+v, read after every update %+v", i, lazy.rows[i], eager.rows[min(i, len(eager.rows)-1)])
		}
	}
	cpu := run("cpu", false)
	for i, r := range lazy.rows {
		w := cpu.rows[i]
		for _, x := range []struct {
			what      string
			got, want float64
		}{{"alpha", r.Alpha, w.Alpha}, {"critic loss", r.CriticLoss, w.CriticLoss}, {"actor loss", r.ActorLoss, w.ActorLoss}} {
			if !(math.Abs(x.got-x.want) <= 1e-3*math.Max(1, math.Abs(x.want))) {
				t.Errorf("row %d %s: emu %v, cpu %v", i, x.what, x.got, x.want)
			}
		}
	}
}
