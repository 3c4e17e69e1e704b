package serve

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admpo/admpo/policies"
)

// Histogram bucket upper bounds.
var (
	latencyBuckets = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}
	batchBuckets   = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
)

// histogram is a Prometheus histogram with fixed buckets, safe for
// concurrent use.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket (not cumulative); last is +Inf
	sum    atomic.Uint64   // float64 bits
	n      atomic.Uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// observe records v; NaN and ±Inf are ignored (they would poison the sum).
func (h *histogram) observe(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	i, _ := slices.BinarySearch(h.bounds, v) // first bound >= v
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.n.Add(1)
}

func (h *histogram) write(w io.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", name, cum)
}

// metrics are the server's Prometheus metrics.
type metrics struct {
	mu       sync.Mutex
	requests map[reqKey]uint64 // by route and status code
	errors   map[string]uint64 // responses >= 400, by route

	bundle        atomic.Pointer[bundleLabels] // the bundle being served
	reloadsOK     atomic.Uint64
	reloadsFailed atomic.Uint64

	inFlight atomic.Int64
	latency  *histogram // POST /v1/act handling time, seconds
	batch    *histogram // observations per /v1/act request
	uadm     *histogram // U^ADM percentile of monitored requests
}

// bundleLabels are admpo_bundle_info's labels.
type bundleLabels struct{ sha256, runKind, task, algorithm, runtime string }

func (m *metrics) setBundle(p *policies.Policy) {
	man := p.Manifest()
	m.bundle.Store(&bundleLabels{p.Digest(), man.RunKind, man.Task, man.Algorithm, p.Runtime()})
}

func (m *metrics) reloaded(ok bool) {
	if ok {
		m.reloadsOK.Add(1)
	} else {
		m.reloadsFailed.Add(1)
	}
}

type reqKey struct {
	route string
	code  int
}

func newMetrics() *metrics {
	return &metrics{requests: map[reqKey]uint64{}, errors: map[string]uint64{},
		latency: newHistogram(latencyBuckets), batch: newHistogram(batchBuckets),
		uadm: newHistogram([]float64{50, 75, 90, 95, 99, 100})}
}

func (m *metrics) record(route string, code int, d time.Duration) {
	m.mu.Lock()
	m.requests[reqKey{route, code}]++
	if code >= 400 {
		m.errors[route]++
	}
	m.mu.Unlock()
	if route == routeAct {
		m.latency.observe(d.Seconds())
	}
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	keys := make([]reqKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b reqKey) int {
		if a.route != b.route {
			if a.route < b.route {
				return -1
			}
			return 1
		}
		return a.code - b.code
	})
	reqs := make([]uint64, len(keys))
	for i, k := range keys {
		reqs[i] = m.requests[k]
	}
	routes := make([]string, 0, len(m.errors))
	for r := range m.errors {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	errs := make([]uint64, len(routes))
	for i, r := range routes {
		errs[i] = m.errors[r]
	}
	m.mu.Unlock()

	fmt.Fprintf(w, "# HELP admpo_http_requests_total HTTP requests answered, by route and status code.\n# TYPE admpo_http_requests_total counter\n")
	for i, k := range keys {
		fmt.Fprintf(w, "admpo_http_requests_total{route=%q,code=\"%d\"} %d\n", k.route, k.code, reqs[i])
	}
	fmt.Fprintf(w, "# HELP admpo_http_errors_total HTTP requests answered with a status >= 400, by route.\n# TYPE admpo_http_errors_total counter\n")
	for i, r := range routes {
		fmt.Fprintf(w, "admpo_http_errors_total{route=%q} %d\n", r, errs[i])
	}
	if b := m.bundle.Load(); b != nil {
		fmt.Fprintf(w, "# HELP admpo_bundle_info The bundle being served (value 1): its sha256 (of manifest.json), run kind, task, algorithm and runtime.\n# TYPE admpo_bundle_info gauge\n")
		fmt.Fprintf(w, "admpo_bundle_info{sha256=%q,run_kind=%q,task=%q,algorithm=%q,runtime=%q} 1\n", b.sha256, b.runKind, b.task, b.algorithm, b.runtime)
	}
	fmt.Fprintf(w, "# HELP admpo_bundle_reloads_total Bundle reloads (SIGHUP or POST /admin/reload), by result.\n# TYPE admpo_bundle_reloads_total counter\n")
	fmt.Fprintf(w, "admpo_bundle_reloads_total{result=\"ok\"} %d\nadmpo_bundle_reloads_total{result=\"failed\"} %d\n", m.reloadsOK.Load(), m.reloadsFailed.Load())
	fmt.Fprintf(w, "# HELP admpo_http_in_flight Requests being handled.\n# TYPE admpo_http_in_flight gauge\nadmpo_http_in_flight %d\n", m.inFlight.Load())
	m.latency.write(w, "admpo_act_duration_seconds", "Time to handle POST /v1/act, body read and response write included.")
	m.batch.write(w, "admpo_act_batch_size", "Observations per POST /v1/act request.")
	m.uadm.write(w, "admpo_uadm_percentile", "Percentile of U^ADM within the training calibration, per monitored request.")
}
