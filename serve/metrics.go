package serve

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/admpo/admpo/policies"
)

// Histogram bucket upper bounds.
var (
	latencyBuckets = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}
	batchBuckets   = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	uadmBuckets    = prometheus.ExponentialBuckets(1e-4, 2, 18) // 1e-4 .. 13
	rankBuckets    = []float64{0.5, 0.75, 0.9, 0.95, 0.99, 1}
)

// metrics are the server's Prometheus metrics, in a registry of their own
// (with the Go runtime, process and build-info collectors).
type metrics struct {
	reg      *prometheus.Registry
	handler  http.Handler
	requests *prometheus.CounterVec // by route and status code
	errors   *prometheus.CounterVec // responses >= 400, by route
	inFlight prometheus.Gauge
	latency  prometheus.Histogram // POST /v1/act handling time, seconds
	batch    prometheus.Histogram // observations per /v1/act request
	uadm     prometheus.Histogram // U^ADM of monitored requests
	rank     prometheus.Histogram // U^ADM's place in the calibration, 0-1
	// outOfRange counts monitored requests with a value outside the
	// bundle's calibrated range.
	outOfRange prometheus.Counter
	bundle     *prometheus.GaugeVec // 1 for the bundle being served
	reloads    *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admpo_http_requests_total",
		Help: "HTTP requests answered, by route and status code."}, []string{"route", "code"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admpo_http_errors_total",
		Help: "HTTP requests answered with a status >= 400, by route."}, []string{"route"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "admpo_http_in_flight", Help: "Requests being handled."})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admpo_act_duration_seconds",
		Help: "Time to handle POST /v1/act, body read and response write included.", Buckets: latencyBuckets})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admpo_act_batch_size",
		Help: "Observations per POST /v1/act request.", Buckets: batchBuckets})
	m.uadm = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admpo_uadm",
		Help: "U^ADM of each monitored POST /v1/act request (same units as the observations).", Buckets: uadmBuckets})
	m.rank = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admpo_uadm_rank_ratio",
		Help:    "U^ADM's place in the bundle's calibration (0-1: the share of training histories with a lower U^ADM), per monitored request.",
		Buckets: rankBuckets})
	m.outOfRange = prometheus.NewCounter(prometheus.CounterOpts{Name: "admpo_uadm_out_of_range_total",
		Help: "Monitored POST /v1/act requests whose history held a value outside the bundle's calibrated range " +
			"(an observation outside the calibration data's, an action outside the bounds): scored percentile 100."})
	m.bundle = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "admpo_bundle_info",
		Help: "The bundle being served (value 1): its sha256 (of manifest.json), run kind, task, algorithm and runtime."},
		[]string{"sha256", "run_kind", "task", "algorithm", "runtime"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admpo_bundle_reloads_total",
		Help: "Bundle reloads (SIGHUP or POST /admin/reload), by result."}, []string{"result"})
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	m.reg.MustRegister(m.requests, m.errors, m.inFlight, m.latency, m.batch, m.uadm, m.rank, m.outOfRange, m.bundle, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector())
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

func (m *metrics) setBundle(p *policies.Policy) {
	man := p.Manifest()
	m.bundle.Reset()
	m.bundle.WithLabelValues(p.Digest(), man.RunKind, man.Task, man.Algorithm, p.Runtime()).Set(1)
}

func (m *metrics) reloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("ok").Inc()
	} else {
		m.reloads.WithLabelValues("failed").Inc()
	}
}

func (m *metrics) record(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	if code >= 400 {
		m.errors.WithLabelValues(route).Inc()
	}
	if route == routeAct {
		m.latency.Observe(d.Seconds())
	}
}

// observe records v in h; NaN and ±Inf are left out (they would poison
// the sum).
func observe(h prometheus.Histogram, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	h.Observe(v)
}
