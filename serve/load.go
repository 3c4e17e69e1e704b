package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admpo/admpo/policies"
)

// LoadConfig configures LoadWith.
type LoadConfig struct {
	URL         string        // e.g. http://127.0.0.1:8080/v1/act
	Body        []byte        // POSTed as application/json
	Concurrency int           // workers, each with one keep-alive connection (default 1)
	Duration    time.Duration // stop after this long (default 5 s)
	MaxRequests int           // stop after this many requests (default 10 million)
	Timeout     time.Duration // per request (default 5 s)
}

// LoadResult summarises a load run.
type LoadResult struct {
	Requests int           // requests completed (errors included)
	Errors   int           // transport errors and non-200 answers
	Elapsed  time.Duration // wall time of the run
	RPS      float64       // Requests / Elapsed
	Latency  policies.Latency
	// FirstError describes the first error, "" when none.
	FirstError string
	// CPUPerRequest is the process's CPU time (user + system) per request
	// during the run; set by BenchLoopback, where it covers client and
	// server together, so 1/CPUPerRequest is the request rate one
	// dedicated core would sustain. Less sensitive to other load on the
	// machine than RPS.
	CPUPerRequest time.Duration
}

// String formats the result on one line.
func (r LoadResult) String() string {
	s := fmt.Sprintf("%d requests in %v: %.0f req/s, %d errors, latency %v",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.RPS, r.Errors, r.Latency)
	if r.CPUPerRequest > 0 {
		s += fmt.Sprintf(", %.1fus CPU/request (client+server)", float64(r.CPUPerRequest)/float64(time.Microsecond))
	}
	if r.FirstError != "" {
		s += " (first error: " + r.FirstError + ")"
	}
	return s
}

// Load POSTs body to url from concurrency workers for duration (or until
// ctx ends) and reports throughput and latency.
func Load(ctx context.Context, url string, body []byte, concurrency int, duration time.Duration) (LoadResult, error) {
	return LoadWith(ctx, LoadConfig{URL: url, Body: body, Concurrency: concurrency, Duration: duration})
}

// LoadWith runs a load test bounded by time and request count.
func LoadWith(ctx context.Context, cfg LoadConfig) (LoadResult, error) {
	if cfg.URL == "" {
		return LoadResult{}, errors.New("serve: load: no URL")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = 10_000_000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	tr := &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	var issued atomic.Int64
	var errCount atomic.Int64
	var firstErr sync.Once
	var first string
	lat := make([][]time.Duration, cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rd := bytes.NewReader(cfg.Body)
			for ctx.Err() == nil && issued.Add(1) <= int64(cfg.MaxRequests) {
				rd.Reset(cfg.Body)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, rd)
				if err != nil {
					errCount.Add(1)
					firstErr.Do(func() { first = err.Error() })
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.ContentLength = int64(len(cfg.Body))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = errors.New("HTTP " + strconv.Itoa(resp.StatusCode))
					}
				}
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return // cut off by the deadline: not counted
					}
					errCount.Add(1)
					firstErr.Do(func() { first = err.Error() })
				}
				lat[w] = append(lat[w], d)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	res := LoadResult{Requests: len(all), Errors: int(errCount.Load()), Elapsed: elapsed,
		Latency: policies.Summarize(all), FirstError: first}
	if elapsed > 0 {
		res.RPS = float64(res.Requests) / elapsed.Seconds()
	}
	return res, nil
}

// SampleBody is a /v1/act body with one seeded standard-normal
// observation of obsDim values.
func SampleBody(obsDim int, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	obs := make([]float32, obsDim)
	for i := range obs {
		obs[i] = float32(rng.NormFloat64())
	}
	b := append([]byte(`{"obs":`), appendFloats(nil, obs)...)
	return append(b, '}')
}

// BenchLoopback serves p on a loopback port and load-tests it with
// SampleBody requests for duration, then shuts the server down.
func BenchLoopback(ctx context.Context, p *policies.Policy, opts Options, concurrency int, duration time.Duration) (LoadResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return LoadResult{}, fmt.Errorf("serve: bench: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Serve(sctx, ln, New(p, opts)) }()
	url := "http://" + ln.Addr().String() + routeAct
	cpu0 := processCPU()
	res, err := Load(ctx, url, SampleBody(p.ObsDim(), 1), concurrency, duration)
	if cpu := processCPU() - cpu0; cpu > 0 && res.Requests > 0 {
		res.CPUPerRequest = cpu / time.Duration(res.Requests)
	}
	stop()
	if serr := <-done; err == nil && serr != nil {
		err = serr
	}
	return res, err
}
