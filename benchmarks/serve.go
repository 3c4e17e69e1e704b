package benchmarks

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/serve"
)

// ServeConfig sizes the deployment benchmark.
type ServeConfig struct {
	Bundle      string        // bundle to load; "" builds a random hopper-sized actor
	Calls       int           // in-process timed calls per runtime
	Concurrency []int         // HTTP client connections, one load run each
	Duration    time.Duration // per HTTP load run
}

// randomBundle is a bundle with a random 256x256 actor for obs 11, act 3.
func randomBundle() (*policies.Bundle, error) {
	low, high := []float64{-1, -1, -1}, []float64{1, 1, 1}
	a := models.NewActor(11, low, high, []int{256, 256}, rand.New(rand.NewSource(1)))
	b, err := onnx.ExportActor(a, map[string]string{"task": "hopper"})
	if err != nil {
		return nil, err
	}
	bu := &policies.Bundle{Policy: b, Manifest: policies.Manifest{Task: "hopper", Algorithm: "random", ActLow: low, ActHigh: high}}
	return bu, bu.Complete()
}

func openBundle(c ServeConfig, rt string) (*policies.Policy, error) {
	if c.Bundle != "" {
		return policies.Open(c.Bundle, policies.Options{Runtime: rt})
	}
	b, err := randomBundle()
	if err != nil {
		return nil, err
	}
	return policies.OpenBundle(b, policies.Options{Runtime: rt})
}

// Serve measures batch-1 act latency in process for the ONNX Runtime and
// pure-Go runtimes, then HTTP throughput from a bounded loopback client.
func Serve(ctx context.Context, c ServeConfig) (*Table, error) {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	t := &Table{Title: "admpo bench serve: act latency and HTTP load (loopback)", Header: machine(),
		Columns: []string{"measurement", "requests", "req/s", "p50 us", "p99 us", "errors"}}
	if c.Bundle == "" {
		t.Header["policy"] = "random actor, obs 11, act 3, 256x256"
	} else {
		t.Header["policy"] = c.Bundle
	}
	for _, rt := range []string{"ort", "go"} {
		p, err := openBundle(c, rt)
		if err != nil {
			return nil, err
		}
		l, err := policies.BenchAct(p, c.Calls, 1)
		p.Close()
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, []any{"in-process Act, batch 1, runtime " + rt, l.N, nil, us(l.P50), us(l.P99), 0})
	}
	p, err := openBundle(c, "ort")
	if err != nil {
		return nil, err
	}
	defer p.Close()
	for _, conc := range c.Concurrency {
		r, err := serve.BenchLoopback(ctx, p, serve.Options{}, conc, c.Duration)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, []any{fmt.Sprintf("HTTP POST /v1/act, %d connections, %v", conc, c.Duration), r.Requests, r.RPS,
			us(r.Latency.P50), us(r.Latency.P99), r.Errors})
		if r.CPUPerRequest > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%d connections: %.1f us CPU per request, client and server together", conc, us(r.CPUPerRequest)))
		}
	}
	return t, nil
}
