-- wrk script for admpo serve: POST /v1/act with one 11-value (hopper) observation.
-- Used by benchmarks/serve_wrk.sh; on its own:
--   wrk -t2 -c4 -d10s -s benchmarks/serve_act.lua http://127.0.0.1:18080/v1/act
-- WRK_TOKEN=... adds "Authorization: Bearer ..." (for serve --token-file).
-- At the end it prints one line "RESULT key=value ..." with requests/s, latency
-- percentiles in microseconds and wrk's error counts (status: answers >= 400).
-- No response() callback: it would cost the client a Lua call per answer.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"obs":[0.0125,-0.031,0.0042,0.0187,-0.0263,0.117,-0.289,0.402,-0.154,0.0981,-0.0447]}'
local token = os.getenv("WRK_TOKEN")
if token and token ~= "" then
   wrk.headers["Authorization"] = "Bearer " .. token
end

function done(summary, latency, requests)
   local secs = summary.duration / 1e6
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d seconds=%.3f rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
      "connect=%d read=%d write=%d status=%d timeout=%d\n",
      summary.requests, secs, summary.requests / secs,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      e.connect, e.read, e.write, e.status, e.timeout))
end
