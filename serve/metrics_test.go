package serve

import (
	"bufio"
	"math"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

// sampleLine is the exposition format's sample line: name{labels} value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? (\S+)$`)

// parseMetrics checks the Prometheus text format line by line and returns
// the samples keyed by name{labels}.
func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	typed := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) != 4 || (f[3] != "counter" && f[3] != "gauge" && f[3] != "histogram" && f[3] != "summary" && f[3] != "untyped") {
				t.Fatalf("bad TYPE line %q", line)
			}
			typed[f[2]] = f[3]
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a sample line: %q", line)
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_sum"), "_count")
		if typed[m[1]] == "" && typed[base] != "histogram" && typed[base] != "summary" {
			t.Fatalf("sample %q before its TYPE line", line)
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Fatalf("bad value in %q", line)
		}
		out[m[1]+m[2]] = v
	}
	return out
}

// checkHistogram verifies cumulative buckets ending at +Inf == _count.
func checkHistogram(t *testing.T, text, name string) {
	t.Helper()
	prev := -1.0
	var inf float64
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"_bucket{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if v < prev {
				t.Fatalf("%s buckets not cumulative at %q", name, line)
			}
			prev, inf = v, v
		}
	}
	s := parseMetrics(t, text)
	if s[name+"_count"] != inf || !strings.Contains(text, name+`_bucket{le="+Inf"}`) {
		t.Fatalf("%s: +Inf bucket %v, count %v", name, inf, s[name+"_count"])
	}
}

func TestMetrics(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, true)
	h := New(f.open(t, policies.Options{}), Options{})
	ok := jsonVec(make([]float32, testObs))
	for i := 0; i < 3; i++ {
		do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`}`)
	}
	do(t, h, "POST", "/v1/act", "", `{"obs":[`+ok+`,`+ok+`,`+ok+`,`+ok+`]}`)
	do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`,"history":{"obs":[`+ok+`],"act":[[0,0,0]]}}`)
	do(t, h, "POST", "/v1/act", "", `{"obs":[1]}`)
	do(t, h, "POST", "/v1/act", "", `{`)
	do(t, h, "GET", "/v1/act", "", "")
	do(t, h, "GET", "/nowhere", "", "")
	do(t, h, "GET", "/healthz", "", "")
	rec := do(t, h, "GET", "/metrics", "", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	text := rec.Body.String()
	s := parseMetrics(t, text)
	want := map[string]float64{
		`admpo_http_requests_total{code="200",route="/v1/act"}`:  5,
		`admpo_http_requests_total{code="400",route="/v1/act"}`:  2,
		`admpo_http_requests_total{code="405",route="/v1/act"}`:  1,
		`admpo_http_requests_total{code="404",route="other"}`:    1,
		`admpo_http_requests_total{code="200",route="/healthz"}`: 1,
		`admpo_http_errors_total{route="/v1/act"}`:               3,
		`admpo_http_errors_total{route="other"}`:                 1,
		`admpo_http_in_flight`:                                   1, // the /metrics request itself
		`admpo_act_duration_seconds_count`:                       8,
		`admpo_act_batch_size_count`:                             5,
		`admpo_act_batch_size_bucket{le="1"}`:                    4,
		`admpo_act_batch_size_bucket{le="2"}`:                    4,
		`admpo_act_batch_size_bucket{le="4"}`:                    5,
		`admpo_act_batch_size_sum`:                               8,
		`admpo_uadm_rank_ratio_count`:                            1,
		`admpo_uadm_count`:                                       1,
		`admpo_bundle_reloads_total{result="ok"}`:                0,
	}
	for k, v := range want {
		if got, ok := s[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if s[`admpo_act_duration_seconds_sum`] <= 0 {
		t.Error("latency sum is not positive")
	}
	for _, name := range []string{"admpo_act_duration_seconds", "admpo_act_batch_size", "admpo_uadm", "admpo_uadm_rank_ratio"} {
		checkHistogram(t, text, name)
	}
}

// TestObserveSkipsNonFinite: NaN and ±Inf never reach a histogram's sum.
func TestObserveSkipsNonFinite(t *testing.T) {
	m := newMetrics()
	for _, v := range []float64{0.5, math.NaN(), math.Inf(1), math.Inf(-1), 2} {
		observe(m.uadm, v)
	}
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	s := parseMetrics(t, rec.Body.String())
	if s["admpo_uadm_sum"] != 2.5 || s["admpo_uadm_count"] != 2 {
		t.Fatalf("sum %v count %v, want 2.5 and 2", s["admpo_uadm_sum"], s["admpo_uadm_count"])
	}
}

// TestPromtoolAcceptsMetrics runs `promtool check metrics` (Debian package
// prometheus, installed by make setup) on a busy server's /metrics.
func TestPromtoolAcceptsMetrics(t *testing.T) {
	ortskip.IfMissing(t)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus; make setup does)")
	}
	f := newFixture(t, true)
	h := New(f.open(t, policies.Options{}), Options{})
	ok := jsonVec(make([]float32, testObs))
	do(t, h, "POST", "/v1/act", "", `{"obs":`+ok+`,"history":{"obs":[`+ok+`],"act":[[0,0,0]]}}`)
	do(t, h, "POST", "/v1/act", "", `{"obs":[1]}`)
	do(t, h, "GET", "/nowhere", "", "")
	text := do(t, h, "GET", "/metrics", "", "").Body.String()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n--- metrics:\n%s", err, out, text)
	}
}
