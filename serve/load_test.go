package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

func TestLoadCountsRequestsAndErrors(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if hits.Add(1)%4 == 0 {
			http.Error(w, "every fourth fails", 500)
			return
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	res, err := LoadWith(context.Background(), LoadConfig{URL: srv.URL, Body: []byte("{}"), Concurrency: 3, Duration: 10 * time.Second, MaxRequests: 200})
	if err != nil {
		t.Fatal(err)
	}
	// The server counted exactly what the generator says it sent.
	if res.Requests != 200 || hits.Load() != 200 || res.Errors != 50 || res.Latency.N != 200 {
		t.Fatalf("result %+v, server saw %d", res, hits.Load())
	}
	if res.FirstError != "HTTP 500" || res.RPS <= 0 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 {
		t.Fatalf("result %v", res)
	}
	// Bounded by time.
	t0 := time.Now()
	res, err = Load(context.Background(), srv.URL, []byte("{}"), 2, 200*time.Millisecond)
	if el := time.Since(t0); err != nil || el > 2*time.Second || res.Requests == 0 || int64(res.Requests) > hits.Load()-200 {
		t.Fatalf("timed run: %v %v after %v", res, err, el)
	}
}

func TestBenchLoopback(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, false)
	p := f.open(t, policies.Options{})
	res, err := BenchLoopback(context.Background(), p, Options{}, 2, 300*time.Millisecond)
	if err != nil || res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("%v %v", res, err)
	}
	t.Log(res)
	// SampleBody is a valid request for this policy.
	var req struct{ Obs []float32 }
	if err := json.Unmarshal(SampleBody(testObs, 1), &req); err != nil || len(req.Obs) != testObs {
		t.Fatalf("sample body: %v %v", req, err)
	}
}

// BenchmarkLoopback load-tests a Hopper-sized actor (11 -> 256x256 -> 3)
// behind a loopback server for 3 s per concurrency level, client and server
// in one process:
//
//	GOMAXPROCS=2 go test -run XXX -bench Loopback -benchtime 1x ./serve/
func BenchmarkLoopback(b *testing.B) {
	ortskip.IfMissing(b)
	dir := hopperBundle(b)
	p, err := policies.Open(dir, policies.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, c := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			res, err := BenchLoopback(context.Background(), p, Options{}, c, 3*time.Second)
			if err != nil || res.Errors != 0 {
				b.Fatalf("%v %v", res, err)
			}
			b.ReportMetric(res.RPS, "req/s")
			b.ReportMetric(float64(res.Latency.P50.Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(res.Latency.P99.Nanoseconds())/1e3, "p99-us")
			b.ReportMetric(float64(res.CPUPerRequest.Nanoseconds())/1e3, "cpu-us/req")
		})
	}
}
