package train

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/serve"
)

// exportCase is one run kind to train and export.
type exportCase struct {
	name, algo, kind, task string
	low, high              []float64
	data                   *datasets.Dataset // offline: the run's data set
	dir                    string
}

// TestExportEveryRunKind trains a tiny run of every kind (online
// admpo/mbpo/sac, offline admpo/mopo/bc on a hopper data set, admpo on data
// without a task), exports it, and checks the manifest (algorithm, run kind,
// task, bounds, ADM only for ADMPO), the U^ADM calibration against
// percentiles computed here from histories drawn from the run's own data
// (the data set, for offline runs), and that the written bundle serves
// the run's actor over HTTP.
func TestExportEveryRunKind(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	hopperLow, hopperHigh := []float64{-1, -1, -1}, []float64{1, 1, 1}
	var cases []*exportCase
	for _, algo := range []string{"admpo", "mbpo", "sac"} {
		dir := filepath.Join(tmp, "on-"+algo)
		a, err := NewOnline(tinyConfig(algo), dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.Close()
		cases = append(cases, &exportCase{name: "online " + algo, algo: algo, kind: KindOnline, task: "hopper",
			low: hopperLow, high: hopperHigh, dir: dir})
	}
	dsPath := Fixtures.RandomHopperFile(t, 1500)
	ds, err := datasets.ReadD4RL(dsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, algo := range OfflineAlgos {
		dir := filepath.Join(tmp, "off-"+algo)
		cfg := Fixtures.TinyOfflineConfig(t, algo, "random", dsPath)
		cfg.Epochs = 1
		Fixtures.RunOfflineToEnd(t, cfg, dir)
		cases = append(cases, &exportCase{name: "offline " + algo, algo: algo, kind: KindOffline, task: "hopper",
			low: hopperLow, high: hopperHigh, data: ds, dir: dir})
	}
	byoPath := filepath.Join(tmp, "robot-log.hdf5")
	byo := byoDataset(1500, 2)
	if err := datasets.WriteD4RL(byoPath, byo); err != nil {
		t.Fatal(err)
	}
	{
		cfg := Fixtures.TinyOfflineConfig(t, "admpo", "medium", byoPath)
		cfg.Env, cfg.Name, cfg.Kind, cfg.Termination, cfg.Epochs = "", "robot-log", "", "none", 1
		dir := filepath.Join(tmp, "byo")
		Fixtures.RunOfflineToEnd(t, cfg, dir)
		var saved OfflineConfig
		b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		if err := json.Unmarshal(b, &saved); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, &exportCase{name: "own data admpo", algo: "admpo", kind: KindOwnData, task: "robot-log",
			low: saved.ActionLow, high: saved.ActionHigh, data: byo, dir: dir})
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const samples = 300
			b, info, err := ExportBundle(c.dir, samples)
			if err != nil {
				t.Fatal(err)
			}
			m := b.Manifest
			suffix := map[string]string{KindOnline: "-on", KindOffline: "-off", KindOwnData: "-off"}[c.kind]
			if m.Algorithm != c.algo+suffix || m.RunKind != c.kind || info.Kind != c.kind || m.Task != c.task {
				t.Fatalf("manifest algorithm %q, run_kind %q (info %q), task %q; want %q, %q, %q",
					m.Algorithm, m.RunKind, info.Kind, m.Task, c.algo+suffix, c.kind, c.task)
			}
			if !slices.Equal(m.ActLow, c.low) || !slices.Equal(m.ActHigh, c.high) {
				t.Fatalf("action bounds %v..%v, want %v..%v", m.ActLow, m.ActHigh, c.low, c.high)
			}
			if (b.ADM != nil) != (c.algo == "admpo") || (m.Calibration != nil) != (c.algo == "admpo") {
				t.Fatalf("ADM present %v, calibration %v, for %s", b.ADM != nil, m.Calibration != nil, c.algo)
			}
			if c.algo == "admpo" {
				checkCalibration(t, b, c, samples)
			}
			out := filepath.Join(t.TempDir(), "bundle")
			if err := policies.WriteBundle(out, *b); err != nil {
				t.Fatal(err)
			}
			checkServes(t, out, c)
		})
	}

	t.Run("changed data set", func(t *testing.T) {
		c := cases[len(cases)-1]
		changed := byoDataset(1500, 3)
		if err := datasets.WriteD4RL(byoPath, changed); err != nil {
			t.Fatal(err)
		}
		defer datasets.WriteD4RL(byoPath, byo)
		if _, _, err := ExportBundle(c.dir, 10); err == nil || !strings.Contains(err.Error(), "changed") {
			t.Fatalf("export after the data set changed: %v", err)
		}
	})
	t.Run("not a run", func(t *testing.T) {
		if _, _, err := ExportBundle(tmp, 10); err == nil || !strings.Contains(err.Error(), "not a run directory") {
			t.Fatalf("export of a non-run: %v", err)
		}
		if _, _, err := ExportBundle(cases[0].dir, 0); err == nil {
			t.Fatal("0 calibration samples accepted")
		}
	})
	t.Run("resume refuses the other kind", func(t *testing.T) {
		if _, err := ResumeOnline(cases[3].dir); err == nil || !strings.Contains(err.Error(), "holds an offline run, not an online one") {
			t.Fatalf("ResumeOnline of an offline run: %v", err)
		}
		if _, err := ResumeOffline(cases[0].dir); err == nil || !strings.Contains(err.Error(), "holds an online run, not an offline one") {
			t.Fatalf("ResumeOffline of an online run: %v", err)
		}
	})
	t.Run("an offline run has no real replay", func(t *testing.T) {
		r, err := OpenRunDir(cases[3].dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != KindOffline || r.Offline == nil || r.Online != nil || r.RealData() != dsPath {
			t.Fatalf("offline run read as kind %q, offline config %v, online config %v, real data %q", r.Kind, r.Offline != nil, r.Online != nil, r.RealData())
		}
		if _, err := r.Real(); err == nil || !strings.Contains(err.Error(), "offline") {
			t.Fatalf("Real of an offline run: %v", err)
		}
	})
}

// checkCalibration recomputes the calibration from histories drawn here:
// the same seeded draws of a row index, walked back within its episode
// (from the data set's own flags for offline runs), U^ADM of each from the
// bundle's monitor, and numpy-"linear" percentiles.
func checkCalibration(t *testing.T, b *policies.Bundle, c *exportCase, samples int) {
	t.Helper()
	var obs, act, next []float32
	var end []bool
	var od, ad int
	if c.data != nil {
		d := c.data
		od, ad, obs, act, next = d.ObsDim, d.ActDim, d.Obs, d.Act, d.NextObs
		for i := 0; i < d.N; i++ {
			end = append(end, d.Terminal[i] || d.Timeout[i])
		}
	} else {
		// Online: the real replay from the checkpoint, oldest first.
		run, err := OpenRunDir(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := run.Real()
		if err != nil {
			t.Fatal(err)
		}
		od, ad = r.ObsDim, r.ActDim
		for k := 0; k < r.Len(); k++ {
			tr := r.At(k)
			obs = append(obs, tr.Obs...)
			act = append(act, tr.Act...)
			next = append(next, tr.NextObs...)
			end = append(end, tr.Terminal || tr.Timeout)
		}
	}
	var cfg struct{ Seed int64 }
	cj, _ := os.ReadFile(filepath.Join(c.dir, "config.json"))
	if err := json.Unmarshal(cj, &cfg); err != nil {
		t.Fatal(err)
	}
	p, err := policies.OpenBundle(b, policies.Options{Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mon, err := p.Monitor()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	n := len(end)
	var us []float64
	for range samples {
		k := rng.Intn(n)
		s := k
		for s > k-(mon.M()-1) && s > 0 && !end[s-1] {
			s--
		}
		if s == k {
			continue
		}
		rd, err := mon.Uncertainty(obs[s*od:(k+1)*od], act[s*ad:(k+1)*ad])
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, rd.U)
	}
	slices.Sort(us)
	cal := b.Manifest.Calibration
	if cal.Samples != len(us) {
		t.Fatalf("calibration from %d histories, want %d", cal.Samples, len(us))
	}
	for _, q := range cal.Quantiles {
		pos := q.P / 100 * float64(len(us)-1)
		lo := int(pos)
		hi := min(lo+1, len(us)-1)
		want := us[lo] + (pos-float64(lo))*(us[hi]-us[lo])
		if math.Abs(q.U-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("p%v = %v, want %v", q.P, q.U, want)
		}
	}
	if cal.Quantiles[len(cal.Quantiles)-1].U <= 0 {
		t.Fatal("every calibration U^ADM is 0")
	}
	// The range the monitor checks: every observation and next observation.
	if cal.Range == nil {
		t.Fatal("the calibration records no observation range")
	}
	for j := range od {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, o := range [][]float32{obs, next} {
			for i := j; i < len(o); i += od {
				lo, hi = math.Min(lo, float64(o[i])), math.Max(hi, float64(o[i]))
			}
		}
		if cal.Range.ObsLow[j] != lo || cal.Range.ObsHigh[j] != hi {
			t.Fatalf("range of observation value %d is [%v, %v], the data's [%v, %v]", j, cal.Range.ObsLow[j], cal.Range.ObsHigh[j], lo, hi)
		}
	}
}

// checkServes opens the written bundle, serves it and compares the served
// action with ONNX Runtime's on the run's policy.onnx.
func checkServes(t *testing.T, bundle string, c *exportCase) {
	t.Helper()
	p, err := policies.Open(bundle, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(serve.New(p, serve.Options{}))
	defer srv.Close()
	od := p.ObsDim()
	obs := make([]float32, od)
	for i := range obs {
		obs[i] = 0.1 * float32(i%3)
	}
	body, _ := json.Marshal(map[string]any{"obs": obs})
	resp, err := http.Post(srv.URL+"/v1/act", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/act: %d %s", resp.StatusCode, raw)
	}
	var got struct{ Action []float32 }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	ref := testfix.OpenRunPolicy(t, c.dir)
	want := make([]float32, ref.ActDim)
	if err := ref.Act(obs, nil, want); err != nil {
		t.Fatal(err)
	}
	if len(got.Action) != len(want) {
		t.Fatalf("served %v, want %v", got.Action, want)
	}
	for i := range want {
		if math.Abs(float64(got.Action[i]-want[i])) > 1e-6 {
			t.Fatalf("served %v, want %v", got.Action, want)
		}
	}
}
