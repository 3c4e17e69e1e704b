package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/policies"
)

func do(t testing.TB, h http.Handler, method, path, ctype, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func jsonVec(v []float32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestActResponses checks successful answers against the float64 reference
// actor and the plain-Go ADM.
func TestActResponses(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, true)
	const pseed = 5
	p := f.open(t, policies.Options{Seed: pseed})
	h := New(p, Options{})
	rng := rand.New(rand.NewSource(1))

	obs := testfix.RandNormal(rng, testObs)
	rec := do(t, h, "POST", "/v1/act", "application/json", `{"obs":`+jsonVec(obs)+`}`)
	var one struct{ Action []float32 }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &one) != nil {
		t.Fatalf("single: %d %s", rec.Code, rec.Body)
	}
	if d := testfix.MaxDiff(one.Action, testfix.RefActor(f.actor, obs, nil)); d > 1e-5 {
		t.Fatalf("single action differs from the reference by %g", d)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}

	batch := [][]float32{testfix.RandNormal(rng, testObs), testfix.RandNormal(rng, testObs), obs}
	bb, _ := json.Marshal(map[string]any{"obs": batch, "deterministic": true})
	rec = do(t, h, "POST", "/v1/act", "application/json; charset=utf-8", string(bb))
	var many struct{ Actions [][]float32 }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &many) != nil || len(many.Actions) != 3 {
		t.Fatalf("batch: %d %s", rec.Code, rec.Body)
	}
	for i := range batch {
		if d := testfix.MaxDiff(many.Actions[i], testfix.RefActor(f.actor, batch[i], nil)); d > 1e-5 {
			t.Fatalf("batch row %d differs by %g", i, d)
		}
	}

	// Stochastic on request: noise is the policy RNG's NormFloat64 draws.
	nr := rand.New(rand.NewSource(pseed))
	for i := 0; i < 2; i++ {
		rec = do(t, h, "POST", "/v1/act", "", `{"obs":`+jsonVec(obs)+`,"deterministic":false}`)
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &one) != nil {
			t.Fatalf("stochastic: %d %s", rec.Code, rec.Body)
		}
		noise := testfix.RandNormal(nr, testAct)
		if d := testfix.MaxDiff(one.Action, testfix.RefActor(f.actor, obs, noise)); d > 1e-5 {
			t.Fatalf("stochastic action %d differs from the reference by %g", i, d)
		}
	}

	// A policy opened stochastic samples unless the request says otherwise.
	hs := New(f.open(t, policies.Options{Stochastic: true, Seed: 9}), Options{})
	nr = rand.New(rand.NewSource(9))
	rec = do(t, hs, "POST", "/v1/act", "", `{"obs":`+jsonVec(obs)+`}`)
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &one) != nil {
		t.Fatalf("default stochastic: %d %s", rec.Code, rec.Body)
	}
	if d := testfix.MaxDiff(one.Action, testfix.RefActor(f.actor, obs, testfix.RandNormal(nr, testAct))); d > 1e-5 {
		t.Fatalf("default-stochastic action differs from the reference by %g", d)
	}
	rec = do(t, hs, "POST", "/v1/act", "", `{"obs":`+jsonVec(obs)+`,"deterministic":true}`)
	if json.Unmarshal(rec.Body.Bytes(), &one) != nil || testfix.MaxDiff(one.Action, testfix.RefActor(f.actor, obs, nil)) > 1e-5 {
		t.Fatalf("deterministic override: %s", rec.Body)
	}

	// History: U^ADM over [history..., current] with the action just chosen.
	for _, steps := range []int{0, 1, 2, testM + 1} {
		hObs := make([][]float32, steps)
		hAct := make([][]float32, steps)
		var flatObs, flatAct []float32
		for i := range hObs {
			hObs[i], hAct[i] = testfix.RandNormal(rng, testObs), testfix.RandNormal(rng, testAct)
			flatObs = append(flatObs, hObs[i]...)
			flatAct = append(flatAct, hAct[i]...)
		}
		body, _ := json.Marshal(map[string]any{"obs": obs, "history": map[string]any{"obs": hObs, "act": hAct}})
		rec = do(t, h, "POST", "/v1/act", "application/json", string(body))
		var r struct {
			Action []float32
			UADM   struct {
				U          float64
				K          int
				Percentile *float64
			}
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &r) != nil {
			t.Fatalf("history %d: %d %s", steps, rec.Code, rec.Body)
		}
		want := testfix.UADM(t, f.adm, append(flatObs, obs...), append(flatAct, r.Action...))
		if math.Abs(r.UADM.U-want) > 1e-4*math.Max(1, want) || r.UADM.K != min(steps+1, testM) {
			t.Fatalf("history %d: uadm %+v, reference U %v", steps, r.UADM, want)
		}
		// Calibration {50: 0.05, 99: 0.5}, by hand.
		wp := 50 * r.UADM.U / 0.05
		if r.UADM.U >= 0.5 {
			wp = 99
		} else if r.UADM.U >= 0.05 {
			wp = 50 + 49*(r.UADM.U-0.05)/0.45
		}
		if r.UADM.Percentile == nil || math.Abs(*r.UADM.Percentile-wp) > 1e-9 {
			t.Fatalf("history %d: percentile %v, want %v", steps, r.UADM.Percentile, wp)
		}
	}
}

// TestErrorPaths sends one bad request per failure mode and checks the
// status and the message.
func TestErrorPaths(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	p := f.open(t, policies.Options{})
	h := New(p, Options{MaxBodyBytes: 4096, MaxBatch: 8, MaxHistory: 3})
	ok := jsonVec(make([]float32, testObs))
	row := func(n int) string { return jsonVec(make([]float32, n)) }
	rows := func(k, n int) string {
		s := make([]string, k)
		for i := range s {
			s[i] = row(n)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	cases := []struct {
		name, method, path, ctype, body string
		code                            int
		want                            string
	}{
		{"GET act", "GET", "/v1/act", "", "", 405, "method GET not allowed on /v1/act: use POST"},
		{"POST info", "POST", "/v1/info", "", "{}", 405, "method POST not allowed on /v1/info: use GET"},
		{"DELETE healthz", "DELETE", "/healthz", "", "", 405, "use GET"},
		{"unknown path", "GET", "/v2/act", "", "", 404, "not found: no route /v2/act"},
		{"trailing slash", "POST", "/v1/act/", "", `{"obs":` + ok + `}`, 404, "not found"},
		{"content type", "POST", "/v1/act", "text/plain", `{"obs":` + ok + `}`, 415, "want application/json"},
		{"too large", "POST", "/v1/act", "", `{"obs":[` + strings.Repeat("0,", 3000) + `0]}`, 413, "exceeds 4096 bytes"},
		{"empty body", "POST", "/v1/act", "", "", 400, "empty body"},
		{"bad JSON", "POST", "/v1/act", "", `{"obs":[1,2`, 400, "bad JSON"},
		{"not an object", "POST", "/v1/act", "", `[1,2,3]`, 400, "bad JSON"},
		{"trailing data", "POST", "/v1/act", "", `{"obs":` + ok + `} {}`, 400, "data after"},
		{"unknown field", "POST", "/v1/act", "", `{"obs":` + ok + `,"observation":1}`, 400, "unknown field"},
		{"key case", "POST", "/v1/act", "", `{"OBS":` + ok + `}`, 400, `unknown field "OBS" (keys are case-sensitive`},
		{"key case 2", "POST", "/v1/act", "", `{"obs":` + ok + `,"Deterministic":true}`, 400, `unknown field "Deterministic"`},
		{"history key case", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"Obs":[],"act":[]}}`, 400, `"history": unknown field "Obs"`},
		{"history unknown key", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":[],"act":[],"rew":[]}}`, 400, `unknown field "rew"`},
		{"history not object", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":[1]}`, 400, `"history": want a JSON object`},
		{"duplicate key", "POST", "/v1/act", "", `{"obs":` + ok + `,"obs":` + ok + `}`, 400, `"obs" appears twice`},
		{"missing obs", "POST", "/v1/act", "", `{"deterministic":true}`, 400, "missing \"obs\""},
		{"null obs", "POST", "/v1/act", "", `{"obs":null}`, 400, "missing \"obs\""},
		{"short obs", "POST", "/v1/act", "", `{"obs":` + row(testObs-1) + `}`, 400, "want obs_dim=5"},
		{"empty obs", "POST", "/v1/act", "", `{"obs":[]}`, 400, "want obs_dim=5"},
		{"string obs", "POST", "/v1/act", "", `{"obs":"1,2,3"}`, 400, "cannot unmarshal"},
		{"string value", "POST", "/v1/act", "", `{"obs":[1,2,"x",4,5]}`, 400, "cannot unmarshal"},
		{"NaN literal", "POST", "/v1/act", "", `{"obs":[1,2,NaN,4,5]}`, 400, "bad JSON"},
		{"float32 overflow", "POST", "/v1/act", "", `{"obs":[1,2,1e39,4,5]}`, 400, "cannot unmarshal"},
		{"float64 overflow", "POST", "/v1/act", "", `{"obs":[1,2,1e400,4,5]}`, 400, "obs"},
		{"ragged batch", "POST", "/v1/act", "", `{"obs":[` + ok + `,` + row(2) + `]}`, 400, "row 1 has 2 values"},
		{"mixed batch", "POST", "/v1/act", "", `{"obs":[` + ok + `,3]}`, 400, "cannot unmarshal"},
		{"empty row", "POST", "/v1/act", "", `{"obs":[[]]}`, 400, "row 0 has 0 values"},
		{"batch too large", "POST", "/v1/act", "", `{"obs":` + rows(9, testObs) + `}`, 413, "limit of 8"},
		{"deterministic not bool", "POST", "/v1/act", "", `{"obs":` + ok + `,"deterministic":"yes"}`, 400, "cannot unmarshal"},
		{"history with batch", "POST", "/v1/act", "", `{"obs":` + rows(2, testObs) + `,"history":{"obs":[],"act":[]}}`, 400, "single observation"},
		{"history lengths", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(2, testObs) + `,"act":` + rows(1, testAct) + `}}`, 400, "2 observations but 1 actions"},
		{"history obs dim", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(1, 4) + `,"act":` + rows(1, testAct) + `}}`, 400, "history.obs"},
		{"history act dim", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(1, testObs) + `,"act":` + rows(1, 1) + `}}`, 400, "history.act"},
		{"history too long", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(4, testObs) + `,"act":` + rows(4, testAct) + `}}`, 413, "limit is 3"},
		{"null value", "POST", "/v1/act", "", `{"obs":[1,null,3,4,5]}`, 400, `"obs" value 1 is null`},
		{"null last value", "POST", "/v1/act", "", `{"obs":[0,0,0,0, null ]}`, 400, `"obs" value 4 is null`},
		{"null in batch", "POST", "/v1/act", "", `{"obs":[` + ok + `,[1,2,3,4,null]]}`, 400, `"obs" row 1 value 4 is null`},
		{"null batch row", "POST", "/v1/act", "", `{"obs":[` + ok + `,null]}`, 400, `"obs" row 1 is null`},
		{"null in history obs", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":[` + ok + `,[0,null,0,0,0]],"act":` + rows(2, testAct) + `}}`, 400, `"history.obs" row 1 value 1 is null`},
		{"null in history act", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(1, testObs) + `,"act":[[null,0,0]]}}`, 400, `"history.act" row 0 value 0 is null`},
		{"null history row", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":` + rows(1, testObs) + `,"act":[null]}}`, 400, `"history.act" row 0 is null`},
		{"history without ADM", "POST", "/v1/act", "", `{"obs":` + ok + `,"history":{"obs":[],"act":[]}}`, 422, "no adm.onnx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := do(t, h, c.method, c.path, c.ctype, c.body)
			msg := rec.Body.String()
			var e struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("error body is not {\"error\": ...} as application/json: %q", msg)
			}
			msg = e.Error
			if c.code == 405 && rec.Header().Get("Allow") == "" {
				t.Fatal("405 without an Allow header")
			}
			if rec.Code != c.code || !strings.Contains(msg, c.want) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, msg, c.code, c.want)
			}
		})
	}
	// Still serving after all that.
	if rec := do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`}`); rec.Code != 200 {
		t.Fatalf("after errors: %d %s", rec.Code, rec.Body)
	}
	// A closed policy answers 503, not a crash.
	p.Close()
	if rec := do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`}`); rec.Code != 503 || !strings.Contains(rec.Body.String(), "closed") {
		t.Fatalf("closed policy: %d %s", rec.Code, rec.Body)
	}
}

func TestInfoAndHealth(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, true)
	h := New(f.open(t, policies.Options{}), Options{})
	rec := do(t, h, "GET", "/v1/info", "", "")
	file, err := os.ReadFile(filepath.Join(f.dir, policies.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		SHA256   string          `json:"bundle_sha256"`
		Runtime  string          `json:"runtime"`
		Manifest json.RawMessage `json:"manifest"`
	}
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &info) != nil {
		t.Fatalf("info %d %s", rec.Code, rec.Body)
	}
	var mj bytes.Buffer
	json.Indent(&mj, info.Manifest, "", "  ")
	mj.WriteByte('\n')
	if !bytes.Equal(mj.Bytes(), file) {
		t.Fatalf("info's manifest differs from manifest.json:\n%s\nvs\n%s", mj.Bytes(), file)
	}
	if h := sha256.Sum256(file); info.SHA256 != hex.EncodeToString(h[:]) || info.Runtime != "ort" {
		t.Fatalf("info: bundle_sha256 %q, runtime %q; want sha256sum manifest.json %x, ort", info.SHA256, info.Runtime, h)
	}
	if rec := do(t, h, "GET", "/healthz", "", ""); rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("healthz %d %q", rec.Code, rec.Body)
	}
	h.Drain()
	if rec := do(t, h, "GET", "/healthz", "", ""); rec.Code != 503 {
		t.Fatalf("healthz while draining: %d", rec.Code)
	}
}

// TestConcurrentRequests runs parallel clients through a real HTTP server
// (use -race) and checks every answer.
func TestConcurrentRequests(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, true)
	for _, rt := range []string{policies.RuntimeORT, policies.RuntimeGo} {
		srv := httptest.NewServer(New(f.open(t, policies.Options{Runtime: rt, Sessions: 2}), Options{}))
		testfix.Concurrently(t, 8, func(g int) error {
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 25; i++ {
				obs := testfix.RandNormal(rng, testObs)
				body := `{"obs":` + jsonVec(obs) + `}`
				if i%5 == 0 {
					body = `{"obs":` + jsonVec(obs) + `,"history":{"obs":[` + jsonVec(testfix.RandNormal(rng, testObs)) + `],"act":[` + jsonVec(testfix.RandNormal(rng, testAct)) + `]}}`
				}
				resp, err := http.Post(srv.URL+"/v1/act", "application/json", strings.NewReader(body))
				if err != nil {
					return err
				}
				var r struct{ Action []float32 }
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					return fmt.Errorf("status %d, %v", resp.StatusCode, err)
				}
				if d := testfix.MaxDiff(r.Action, testfix.RefActor(f.actor, obs, nil)); d > 1e-5 {
					return fmt.Errorf("%s: action differs by %g", rt, d)
				}
			}
			return nil
		})
		srv.Close()
	}
}

// TestNonFiniteResultsAre422 sends finite but huge observations (3e38, as
// float32 can hold) that overflow inside the networks: the action on both
// runtimes, and U^ADM from a history of them. Both are the client's
// problem (422, a JSON error naming it), never a 200 with NaN or a 500, and
// the metrics hold no NaN afterwards.
func TestNonFiniteResultsAre422(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixtureStd(t, true, 1e-3)
	huge := make([]float32, testObs)
	for i := range huge {
		huge[i] = 3e38
		if i%2 == 1 {
			huge[i] = -3e38 // mixed signs: Inf - Inf inside the layers
		}
	}
	ok := jsonVec(make([]float32, testObs))
	for _, rt := range []string{policies.RuntimeORT, policies.RuntimeGo} {
		t.Run(rt, func(t *testing.T) {
			h := New(f.open(t, policies.Options{Runtime: rt}), Options{})
			bodies := []string{`{"obs":` + jsonVec(huge) + `}`, `{"obs":[` + ok + `,` + jsonVec(huge) + `]}`}
			if rt == policies.RuntimeORT { // the monitor runs on ONNX Runtime
				bodies = append(bodies, `{"obs":`+ok+`,"history":{"obs":[`+jsonVec(huge)+`,`+jsonVec(huge)+`,`+ok+`],"act":[[1,0,2],[0,0,0],[-1,0,3]]}}`)
			}
			for _, body := range bodies {
				rec := do(t, h, "POST", "/v1/act", "application/json", body)
				var e struct{ Error string }
				if rec.Code != 422 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "non-finite") {
					t.Fatalf("%.60s...: %d %s, want 422 with a JSON error naming the non-finite result", body, rec.Code, rec.Body)
				}
			}
			// A good monitored request afterwards, then no NaN anywhere.
			if rt == policies.RuntimeORT {
				if rec := do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`,"history":{"obs":[`+ok+`],"act":[[0,0,0]]}}`); rec.Code != 200 {
					t.Fatalf("good request: %d %s", rec.Code, rec.Body)
				}
			}
			text := do(t, h, "GET", "/metrics", "", "").Body.String()
			if strings.Contains(strings.ToLower(text), "nan") || strings.Contains(text, "Inf\n") {
				t.Fatalf("metrics hold a non-finite value:\n%s", text)
			}
			if s := parseMetrics(t, text); s[`admpo_http_requests_total{code="422",route="/v1/act"}`] != float64(len(bodies)) {
				t.Fatalf("422 count %v, want %d", s[`admpo_http_requests_total{code="422",route="/v1/act"}`], len(bodies))
			}
		})
	}
}
