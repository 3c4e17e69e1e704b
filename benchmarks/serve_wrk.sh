#!/usr/bin/env bash
# serve_wrk.sh: compare the HTTP serving throughput of two admpo binaries side by side with wrk.
#
#   benchmarks/serve_wrk.sh OLD_BIN NEW_BIN
#
# Starts `OLD_BIN serve` and `NEW_BIN serve` on loopback (127.0.0.1 only), plus NEW_BIN with TLS
# (a throw-away self-signed certificate made with openssl) and NEW_BIN with --token-file, and loads
# each with wrk (POST /v1/act, one 11-value observation: benchmarks/serve_act.lua). Runs alternate
# between the servers (the order reverses every round) so that the shared machine's load drift falls
# on all of them alike. Prints one line per run, then per configuration the median req/s and p99 over
# the rounds, the errors, the server's CPU time per request (from /proc) and the ratios against OLD.
# Finally `admpo bench serve` of both binaries, alternated (set BENCH_SERVE=0 to skip).
#
# Environment (defaults in brackets):
#   ROUNDS [3]  DURATION [10s]  CONNS ["4 64"]  THREADS [2] (wrk threads)  PORT [18180] (first of 4)
#   OLD_BUNDLE, NEW_BUNDLE: bundles for each binary; unset: a tiny SAC hopper run is trained with
#     NEW_BIN (500 env steps, ~15 s) and exported with each binary, so each server reads its own format
#   EXTRA [1]: also run NEW_BIN with TLS and with --token-file (0: only OLD and NEW plain)
#   BENCH_SERVE [1]  BENCH_DURATION [10s]  BENCH_CALLS [20000]  BENCH_ROUNDS [2]
#   KEEP: a directory to keep the raw output in (default: a temporary directory, removed)
# Needs wrk (Debian: apt-get install wrk), openssl, curl. Exits non-zero if any run had errors.
set -euo pipefail

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -ne 2 || $1 == -h || $1 == --help ]]; then
	usage
	[[ $# -eq 1 && ($1 == -h || $1 == --help) ]] && exit 0
	exit 2
fi
OLD_BIN=$(realpath "$1")
NEW_BIN=$(realpath "$2")
for b in "$OLD_BIN" "$NEW_BIN"; do
	[[ -x $b ]] || { echo "serve_wrk.sh: $b is not an executable" >&2; exit 2; }
done
for t in wrk openssl curl; do
	command -v "$t" >/dev/null || { echo "serve_wrk.sh: $t not found (Debian: apt-get install $t)" >&2; exit 2; }
done

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-4 64}
THREADS=${THREADS:-2}
PORT=${PORT:-18180}
EXTRA=${EXTRA:-1}
BENCH_SERVE=${BENCH_SERVE:-1}
BENCH_DURATION=${BENCH_DURATION:-10s}
BENCH_CALLS=${BENCH_CALLS:-20000}
BENCH_ROUNDS=${BENCH_ROUNDS:-2}
LUA=$(realpath "$(dirname "$0")/serve_act.lua")

if [[ -n ${KEEP:-} ]]; then
	mkdir -p "$KEEP"
	W=$(realpath "$KEEP")
else
	W=$(mktemp -d /tmp/serve_wrk.XXXXXX)
fi
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -n ${KEEP:-} ]] || rm -rf "$W"
}
trap cleanup EXIT

echo "# serve_wrk.sh $(date -u +%FT%TZ) on $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# old: $OLD_BIN ($("$OLD_BIN" version 2>/dev/null | head -1 || echo '?'))"
echo "# new: $NEW_BIN ($("$NEW_BIN" version 2>/dev/null | head -1 || echo '?'))"
echo "# wrk -t$THREADS -d$DURATION -c{$CONNS}, $ROUNDS rounds, raw output in $W"

# Bundles: each binary exports its own from one tiny run.
if [[ -z ${OLD_BUNDLE:-} || -z ${NEW_BUNDLE:-} ]]; then
	echo "# training a tiny SAC hopper run for the bundles"
	"$NEW_BIN" train online --env hopper --algo sac --preset quick --steps 300 --warmup 200 --seed 0 \
		--out "$W/run" >"$W/train.log" 2>&1 || { tail "$W/train.log" >&2; exit 1; }
	"$OLD_BIN" export --run "$W/run" --out "$W/bundle-old" >"$W/export-old.log" 2>&1 || { cat "$W/export-old.log" >&2; exit 1; }
	"$NEW_BIN" export --run "$W/run" --out "$W/bundle-new" >"$W/export-new.log" 2>&1 || { cat "$W/export-new.log" >&2; exit 1; }
	OLD_BUNDLE=${OLD_BUNDLE:-$W/bundle-old}
	NEW_BUNDLE=${NEW_BUNDLE:-$W/bundle-new}
fi

# TLS material and token for the extra configurations.
if [[ $EXTRA == 1 ]]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$W/tls.key" -out "$W/tls.crt" >/dev/null 2>&1
	openssl rand -hex 32 >"$W/token"
	chmod 600 "$W/token" "$W/tls.key"
fi

# name port scheme binary bundle extra-flags...
CONFIGS=("old $PORT http $OLD_BIN $OLD_BUNDLE" "new $((PORT + 1)) http $NEW_BIN $NEW_BUNDLE")
if [[ $EXTRA == 1 ]]; then
	CONFIGS+=("new-tls $((PORT + 2)) https $NEW_BIN $NEW_BUNDLE --tls-cert $W/tls.crt --tls-key $W/tls.key")
	CONFIGS+=("new-token $((PORT + 3)) http $NEW_BIN $NEW_BUNDLE --token-file $W/token")
fi
declare -A SPID URL
for c in "${CONFIGS[@]}"; do
	read -r name port scheme bin bundle flags <<<"$c"
	# shellcheck disable=SC2086 # flags are words
	"$bin" serve --bundle "$bundle" --addr "127.0.0.1:$port" $flags >"$W/serve-$name.log" 2>&1 &
	SPID[$name]=$!
	PIDS+=($!)
	URL[$name]="$scheme://127.0.0.1:$port"
done
for c in "${CONFIGS[@]}"; do
	read -r name _ <<<"$c"
	for _ in $(seq 100); do
		curl -ksf "${URL[$name]}/healthz" >/dev/null 2>&1 && break
		kill -0 "${SPID[$name]}" 2>/dev/null || { echo "serve_wrk.sh: $name did not start:" >&2; cat "$W/serve-$name.log" >&2; exit 1; }
		sleep 0.1
	done
	curl -ksf "${URL[$name]}/healthz" >/dev/null || { echo "serve_wrk.sh: $name not healthy" >&2; exit 1; }
done

cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

# run NAME CONNS DURATION: one wrk run; appends a line to $W/results.
run() {
	local name=$1 c=$2 d=$3 tok="" load t0 t1 out res
	[[ $name == new-token ]] && tok=$(cat "$W/token")
	load=$(cut -d' ' -f1 /proc/loadavg)
	t0=$(cputicks "${SPID[$name]}")
	out=$(WRK_TOKEN=$tok wrk -t"$THREADS" -c"$c" -d"$d" -s "$LUA" "${URL[$name]}/v1/act" 2>&1) || true
	t1=$(cputicks "${SPID[$name]}")
	res=$(grep '^RESULT ' <<<"$out" | sed 's/^RESULT //') || { echo "$out" >&2; return 1; }
	echo "name=$name conns=$c load=$load $res server_ticks=$((t1 - t0))"
}

# Warm-up: one short run per server (first connections, JIT-free but caches and pools).
for c in "${CONFIGS[@]}"; do
	read -r name _ <<<"$c"
	run "$name" 4 2s >/dev/null
done

NAMES=()
for c in "${CONFIGS[@]}"; do read -r name _ <<<"$c"; NAMES+=("$name"); done
: >"$W/results"
for r in $(seq "$ROUNDS"); do
	order=("${NAMES[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#NAMES[@]} - 1; i >= 0; i--)); do order+=("${NAMES[$i]}"); done
	fi
	for c in $CONNS; do
		for name in "${order[@]}"; do
			line="round=$r $(run "$name" "$c" "$DURATION")"
			echo "$line" | tee -a "$W/results"
		done
	done
done

echo
echo "# medians over $ROUNDS rounds (ratio: median / old's median; paired: median over the rounds of
# req/s / old's req/s in the same round; cpu: server CPU time per request over all rounds)"
awk -v tck="$TCK" '
function kv(s,   a, i, p) { for (i = 1; i <= NF; i++) { split($i, p, "="); v[p[1]] = p[2] } }
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	delete v; kv()
	k = v["name"] SUBSEP v["conns"]
	if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
	rps[k] = rps[k] " " v["rps"]; p99[k] = p99[k] " " v["p99_us"]; p50[k] = p50[k] " " v["p50_us"]
	err[k] += v["connect"] + v["read"] + v["write"] + v["status"] + v["timeout"]
	reqs[k] += v["requests"]; ticks[k] += v["server_ticks"]
	loads[k] = loads[k] " " v["load"]
	byround[k, v["round"]] = v["rps"]; rounds[v["round"]] = 1
}
END {
	printf "%-10s %5s %10s %7s %7s %9s %7s %9s %7s %7s %s\n", "server", "conns", "req/s", "ratio", "paired", "p99 us", "ratio", "cpu us/req", "ratio", "errors", "load (per round)"
	for (i = 1; i <= nk; i++) {
		k = keys[i]; split(k, nc, SUBSEP)
		mr[k] = median(rps[k]); mp[k] = median(p99[k]); cpu[k] = ticks[k] / tck * 1e6 / reqs[k]
	}
	for (i = 1; i <= nk; i++) {
		k = keys[i]; split(k, nc, SUBSEP); o = "old" SUBSEP nc[2]
		pr = ""
		for (r in rounds) pr = pr " " byround[k, r] / byround[o, r]
		printf "%-10s %5d %10.0f %7.3f %7.3f %9.0f %7.3f %9.1f %7.3f %7d %s\n", nc[1], nc[2], mr[k], mr[k] / mr[o], median(pr), mp[k], mp[k] / mp[o], cpu[k], cpu[k] / cpu[o], err[k], loads[k]
		errs += err[k]
	}
	exit (errs > 0 ? 3 : 0)
}' "$W/results" | tee "$W/summary" || { echo "serve_wrk.sh: some runs had errors" >&2; exit 3; }

if [[ $BENCH_SERVE == 1 ]]; then
	echo
	echo "# admpo bench serve --calls $BENCH_CALLS --duration $BENCH_DURATION --concurrency ${CONNS// /,}, alternated"
	for r in $(seq "$BENCH_ROUNDS"); do
		pair=("old $OLD_BIN $OLD_BUNDLE" "new $NEW_BIN $NEW_BUNDLE")
		((r % 2 == 0)) && pair=("${pair[1]}" "${pair[0]}")
		for p in "${pair[@]}"; do
			read -r name bin bundle <<<"$p"
			echo "## round $r, $name, load average $(cut -d' ' -f1 /proc/loadavg)"
			"$bin" bench serve --bundle "$bundle" --calls "$BENCH_CALLS" --duration "$BENCH_DURATION" \
				--concurrency "${CONNS// /,}" 2>&1 | grep -E 'measurement|in-process|HTTP|note' | tee -a "$W/bench-$name"
		done
	done
fi
