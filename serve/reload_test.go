package serve

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
)

// actorBundle writes a bundle of a random actor with the given seed.
func actorBundle(t *testing.T, seed int64, kind string) (*models.Actor, string) {
	t.Helper()
	low, high := []float64{-1, -2, 0}, []float64{1, 0.5, 4}
	a := models.NewActor(testObs, low, high, []int{16, 16}, rand.New(rand.NewSource(seed)))
	pol, err := onnx.ExportActor(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := policies.WriteBundle(dir, policies.Bundle{Policy: pol, Manifest: policies.Manifest{
		Task: "serve-test", Algorithm: "sac-on", RunKind: kind, ActLow: low, ActHigh: high}}); err != nil {
		t.Fatal(err)
	}
	return a, dir
}

func getInfo(t *testing.T, url string) (sha, kind string) {
	t.Helper()
	resp, err := http.Get(url + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		SHA256  string `json:"bundle_sha256"`
		RunKind string `json:"run_kind"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info.SHA256, info.RunKind
}

// TestReloadUnderLoad runs a load generator across 20 reloads alternating
// two bundles, with a corrupt bundle in the middle: no request fails, the
// corrupt bundle changes nothing (same sha256, a failed-reload count), the
// replaced policies are closed, and the answers come from the bundle loaded
// last (checked against its float64 reference actor).
func TestReloadUnderLoad(t *testing.T) {
	ortskip.IfMissing(t)
	actA, dirA := actorBundle(t, 5, policies.RunOnline)
	actB, dirB := actorBundle(t, 6, policies.RunOffline)
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	copyBundle(t, dirA, corrupt)
	pp := filepath.Join(corrupt, policies.PolicyFile)
	b, _ := os.ReadFile(pp)
	b[len(b)/2] ^= 0xff
	os.WriteFile(pp, b, 0o644)

	var next atomic.Value
	next.Store(dirA)
	var mu sync.Mutex
	var opened []*policies.Policy
	load := func() (*policies.Policy, error) {
		p, err := policies.Open(next.Load().(string), policies.Options{Sessions: 1})
		if err == nil {
			mu.Lock()
			opened = append(opened, p)
			mu.Unlock()
		}
		return p, err
	}
	first, err := load()
	if err != nil {
		t.Fatal(err)
	}
	h := New(first, Options{Load: load, AdminToken: "s3cret"})
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, stop := context.WithCancel(context.Background())
	loadDone := make(chan LoadResult, 1)
	go func() {
		r, _ := LoadWith(ctx, LoadConfig{URL: srv.URL + "/v1/act", Body: SampleBody(testObs, 1), Concurrency: 4, Duration: time.Minute})
		loadDone <- r
	}()
	time.Sleep(50 * time.Millisecond)
	dirs := []string{dirB, dirA}
	var lastDir string
	for i := 0; i < 20; i++ {
		if i == 10 {
			before, _ := getInfo(t, srv.URL)
			next.Store(corrupt)
			if _, err := h.Reload(); err == nil || !strings.Contains(err.Error(), "still serving") {
				t.Fatalf("corrupt bundle: %v", err)
			}
			if after, _ := getInfo(t, srv.URL); after != before {
				t.Fatalf("a refused reload changed the bundle: %s -> %s", before, after)
			}
		}
		lastDir = dirs[i%2]
		next.Store(lastDir)
		if i%2 == 0 { // half through the admin route
			req, _ := http.NewRequest("POST", srv.URL+"/admin/reload", nil)
			req.Header.Set("Authorization", "Bearer s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("admin reload %d: %v %v", i, resp, err)
			}
			resp.Body.Close()
		} else if _, err := h.Reload(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	stop()
	res := <-loadDone
	if res.Errors != 0 || res.Requests < 100 {
		t.Fatalf("load across the reloads: %v", res)
	}
	t.Logf("load across 20 reloads: %v", res)

	// The last bundle answers.
	ref := actA
	if lastDir == dirB {
		ref = actB
	}
	p, _ := policies.Open(lastDir, policies.Options{})
	wantSHA := p.Digest()
	p.Close()
	if sha, kind := getInfo(t, srv.URL); sha != wantSHA || kind != policies.RunOnline {
		t.Fatalf("info after the reloads: %s %s, want %s online", sha, kind, wantSHA)
	}
	obs := testfix.RandNormal(rand.New(rand.NewSource(2)), testObs)
	resp, err := http.Post(srv.URL+"/v1/act", "application/json", strings.NewReader(`{"obs":`+jsonVec(obs)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Action []float32 }
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if d := testfix.MaxDiff(got.Action, testfix.RefActor(ref, obs, nil)); d > 1e-5 {
		t.Fatalf("after the reloads the action differs from the last bundle's by %g", d)
	}
	// Every replaced policy is closed; the current one is not.
	mu.Lock()
	for i, p := range opened {
		_, err := p.Act(obs)
		if current := i == len(opened)-1; current != (err == nil) || (!current && !errors.Is(err, policies.ErrClosed)) {
			t.Fatalf("policy %d of %d: %v", i, len(opened), err)
		}
	}
	mu.Unlock()
	s := parseMetrics(t, do(t, h, "GET", "/metrics", "", "").Body.String())
	if s[`admpo_bundle_reloads_total{result="ok"}`] != 20 || s[`admpo_bundle_reloads_total{result="failed"}`] != 1 ||
		s[`admpo_bundle_info{algorithm="sac-on",run_kind="online",runtime="ort",sha256="`+wantSHA+`",task="serve-test"}`] != 1 {
		t.Fatalf("reload metrics: %v", s)
	}
	h.Close()
}

// TestAdminReloadAuth: the admin route needs the exact bearer token, is
// forbidden without one configured and says so without a loader.
func TestAdminReloadAuth(t *testing.T) {
	ortskip.IfMissing(t)
	_, dir := actorBundle(t, 5, "")
	open := func() *policies.Policy {
		p, err := policies.Open(dir, policies.Options{Runtime: policies.RuntimeGo})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	load := func() (*policies.Policy, error) {
		return policies.Open(dir, policies.Options{Runtime: policies.RuntimeGo})
	}
	post := func(h http.Handler, auth string) (int, string) {
		req := httptest.NewRequest("POST", "/admin/reload", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	h := New(open(), Options{Load: load, AdminToken: "tok"})
	defer h.Close()
	for _, auth := range []string{"", "Bearer", "Bearer tok2", "Bearer to", "Bearertok", "Basic tok"} {
		if code, body := post(h, auth); code != 401 || !strings.Contains(body, "token") {
			t.Errorf("Authorization %q: %d %s", auth, code, body)
		}
	}
	for _, auth := range []string{"Bearer tok", "bearer tok"} { // the scheme in any case
		if code, body := post(h, auth); code != 200 || !strings.Contains(body, `"reloaded":true`) {
			t.Errorf("right token, %q: %d %s", auth, code, body)
		}
	}
	if code, _ := post(New(open(), Options{Load: load}), "Bearer tok"); code != 403 {
		t.Errorf("no admin token configured: %d", code)
	}
	if code, _ := post(New(open(), Options{AdminToken: "tok"}), "Bearer tok"); code != 501 {
		t.Errorf("no loader: %d", code)
	}
}

func copyBundle(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(from)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
}
