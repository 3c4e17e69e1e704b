// Package serve exposes a policies.Policy over HTTP:
//
//	POST /v1/act   {"obs": [...]} or {"obs": [[...], ...]}, optional
//	               "deterministic": bool (default: the policy's setting,
//	               deterministic unless opened stochastic) and, for one observation,
//	               "history": {"obs": [[...]...], "act": [[...]...]}
//	               -> {"action": [...]} or {"actions": [[...]...]}, plus
//	               "uadm": {"u", "k", "percentile", "out_of_range"} with a history
//	GET  /healthz  200 "ok" (503 while draining)
//	GET  /readyz   the same, for readiness probes
//	GET  /v1/info  {"bundle_sha256", "run_kind", "runtime", "manifest"}
//	GET  /metrics  Prometheus text format
//	POST /admin/reload  (bearer token) reload the bundle (Handler.Reload)
//
// Every error answer is {"error": "..."} (404 and 405 included).
//
// The history holds the observations and actions before the current
// observation, oldest first (obs[i] is the state at which act[i] was taken);
// the monitor appends the current observation and the action just chosen
// and evaluates U^ADM over the last m of them. A value of those steps
// outside the bundle's calibrated range (policies.Reading.OutOfRange) is
// answered "out_of_range": true with percentile 100 and its "excess" and
// "where"; null when the bundle records no range.
//
// New builds the handler, Run and Serve run it with timeouts and graceful
// shutdown, and Load is an HTTP load generator for benchmarks. The package
// links no training code.
package serve
