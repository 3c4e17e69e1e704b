#!/usr/bin/env bash
# One prepared check of admpo on a GPU host (no Go, no network), from the
# payload that scripts/gpu_pack.sh packs (its two parts unpacked into one
# folder, e.g. /tmp/g; gpu_pack.sh prints the device calls):
#   bash /tmp/g/gpu_check.sh
# Steps, each with its own timeout, all within GPU_CHECK_BUDGET seconds
# (default 480; a step that would start later is skipped, and each step's
# timeout is cut to what is left): the host, nvidia-smi, the CUDA 13
# libraries (found with find) and LD_LIBRARY_PATH, ldd of the CUDA provider,
# admpo doctor; the device layer's CUDA tests and timings (device.test,
# issue 32), rolldev's roll-out beside PyTorch's (device-rollout, issue 33's
# S5b) and PyTorch's SAC update and ADM train step on the GPU
# (torch_train.py --device cuda); admpo bench train --device cuda, a
# short hopper SAC run with --device cuda and cpu, a short ADMPO-ON run with
# --device cuda, a short MBPO run with --device cuda (its ensemble fits on the
# device), the ADMPO-ON run again with --rollout-device cuda (issue 33; its
# and the first run's roll-out seconds: train-admpo-rolldev) and a
# PAPER_S-second sample of the cpu preset (train-admpo-cuda, train-admpo-rolldev,
# train-mbpo-cuda, paper-cuda); the bisection of the graphs that crash
# ONNX Runtime's CUDA provider (gpu_bisect.sh, issue 33); the CPU-vs-CUDA
# roll-out tests (ADMPO_GPU_TEST=1, incl. TestCUDARolloutBound); admpo bench rollout with CUDA beside
# PyTorch's ADM-Roll (benchmarks/torch_rollout.py) at 10k/100k (and compiled
# with torch.compile at 100k: torch_cuda_compiled), the GRU-op form (cuDNN's
# RNN: gru_form, with ONNX Runtime's profile), the
# incremental engine on CUDA with its states bound to device memory
# (admpo_cuda_incremental; issue 33), and at 1M
# rows (both with admpo's device roll-out, --device cuda's device-direct and
# device-incremental, beside ONNX Runtime's engines), admpo bench rollout on the CPU at 10k/100k rows, and a table of
# ratios (admpo transitions/s / PyTorch transitions/s). Steps whose files
# the payload lacks are skipped. ROWS_SMALL (10000,100000) and ROWS_LARGE
# (1000000) change the row counts, BENCH_FORM (packed, admpo's default) and BENCH_ENGINES
# (direct) the CUDA benchmarks' graph form and engines; ADMPO_GPU_FORM and
# ADMPO_GPU_ENGINES reach the roll-out tests (infer/gpu_cuda_test.go).
# GPU_CHECK_STEPS (step names, e.g. "host device-test gpu-test"; issue 33's bound
# incremental engine: "gpu-test admpo_cuda_incremental incremental_copied
# torch_cuda_small") runs only
# those steps (without it, every step but OPTIONAL_STEPS: bisect, admpo_cpu, the chunk sweep,
# incremental_copied (the same engine with its states copied through the host), split_sweep, the
# sweep of --workers and --chunk-rows on CUDA, rollout_profile, a CPU
# profile of a CUDA roll-out, and rollout_diag, the GPU's utilisation under
# admpo and PyTorch, TF32 products and ONNX Runtime's own profile); the library
# set-up always runs. It never stops at a failure. Writes into
# $OUT (default /tmp/gpu_out) at most 8 files: summary.txt, ratios.md, ratios.json,
# logs.tgz (every step's log and every JSON result), device.txt,
# torch_train_cuda.json, chunks.md and what gpu_bisect.sh writes (bisect.txt); and a
# short account to stdout that ends with the summary and the ratios.
set -uo pipefail

G=${G:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
OUT=${OUT:-/tmp/gpu_out}
BUDGET=${GPU_CHECK_BUDGET:-480}
WORK=$(mktemp -d /tmp/gpu_check.XXXX)
JSON=$WORK/json # every JSON result; they come back inside logs.tgz
mkdir -p "$OUT" "$JSON"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
T0=$SECONDS
n=0
# Steps that run only when GPU_CHECK_STEPS names them: the bisection (the
# crash it hunted is gone since 2026-11-27), the CPU roll-out bench, the
# 131072-row chunk sweep (measured on 2026-11-28: docs/benchmarks.md), the
# sweep of the engines' split on CUDA and the CPU profile of a CUDA roll-out.
OPTIONAL_STEPS="bisect admpo_cpu admpo_cuda_chunks torch_cuda_chunks split_sweep rollout_profile rollout_diag incremental_copied"

note() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET - (SECONDS - T0))); }
# logs.tgz holds the logs, JSON results and run configs and progress, not the
# runs' checkpoints, ONNX files or caches (a file back from $OUT is at most
# 16 MiB; the paper-cuda checkpoint alone is more).
pack() { tar -czf "$OUT/logs.tgz" -C "$WORK" --exclude=cache --exclude=links --exclude='*.ckpt' --exclude='*.ckpt.*' \
  --exclude='*.onnx' --exclude=graphs --exclude='events.out.*' . 2>/dev/null; }

# step NAME TIMEOUT COMMAND: runs COMMAND (bash) with its own timeout, cut to
# the budget left, logs it to $WORK/NN-NAME.log, prints its tail and notes
# its outcome; the return code is the command's.
step() {
  local name=$1 limit=$2 cmd=$3 rc t
  n=$((n + 1))
  local log
  log=$WORK/$(printf '%02d' "$n")-$name.log
  if [ -n "${GPU_CHECK_STEPS:-}" ] && [[ " $GPU_CHECK_STEPS " != *" $name "* ]]; then
    note "[skip] $name: not in GPU_CHECK_STEPS"
    return 98
  fi
  if [ -z "${GPU_CHECK_STEPS:-}" ] && [[ " $OPTIONAL_STEPS " == *" $name "* ]]; then
    note "[skip] $name: runs only when GPU_CHECK_STEPS names it"
    return 98
  fi
  local l
  l=$(left)
  if [ "$l" -lt 5 ]; then
    note "[skip] $name: budget of ${BUDGET}s spent"
    return 99
  fi
  [ "$limit" -gt "$l" ] && limit=$l
  echo "== [$n] $name (timeout ${limit}s, $((SECONDS - T0))s into the run): ${cmd:0:160}"
  { echo "\$ $cmd"; echo; } >"$log"
  t=$SECONDS
  timeout -k 5 "$limit" bash -c "$cmd" >>"$log" 2>&1
  rc=$?
  t=$((SECONDS - t))
  tail -n +3 "$log" | tail -n "${TAIL:-12}" | cut -c1-300 | sed 's/^/   | /'
  case $rc in
    0) note "[ok]   $name (${t}s)" ;;
    124 | 137) note "[TIMEOUT] $name after ${t}s (limit ${limit}s); log $(basename "$log")" ;;
    *) note "[FAIL] $name rc=$rc (${t}s); log $(basename "$log")" ;;
  esac
  pack
  return $rc
}

note "admpo GPU check, payload $G, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${BUDGET}s"
[ -f "$G/INFO" ] && note "payload: $(cat "$G/INFO")"

step host 15 "uname -a; cat /etc/os-release 2>/dev/null | head -n 2; ldd --version | head -n 1; nproc; free -g | head -n 2; python3 --version; (cd '$G' && sha256sum -c --quiet MANIFEST && echo 'payload checksums ok')"
step nvidia-smi 20 "nvidia-smi; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv"

# --- CUDA 13 libraries and LD_LIBRARY_PATH (in this shell: later steps use it)
LIBLOG=$WORK/00-libraries.log
want=(libcublas.so.13 libcublasLt.so.13 libcudart.so.13 libcurand.so.10 libcudnn.so.9 libcufft.so.12 libnvrtc.so.13 libcuda.so.1)
{
  echo "looking for: ${want[*]}"
  roots=$(timeout 20 python3 -c 'import nvidia, sys; print(" ".join(nvidia.__path__))' 2>/dev/null)
  roots="$roots /opt/torch/.venv/lib/python3.12/site-packages/nvidia /usr/local/cuda/lib64 /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/local/lib"
  echo "fast search in: $roots"
} >"$LIBLOG" 2>&1
declare -A found=()
search() { # search PATHS...: fill found[] from find over PATHS
  local args=() w p
  for w in "${want[@]}"; do args+=(-o -name "$w"); done
  while read -r p; do
    w=$(basename "$p")
    [ -z "${found[$w]:-}" ] && found[$w]=$p
  done < <(timeout 40 find "$@" \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path "$WORK" \) -prune -o \( -false "${args[@]}" \) -print 2>/dev/null)
}
# shellcheck disable=SC2046
search $(for r in $roots; do [ -d "$r" ] && echo "$r"; done)
missing=()
for w in "${want[@]}"; do [ -z "${found[$w]:-}" ] && missing+=("$w"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "not found yet: ${missing[*]}; searching / (40s at most)" >>"$LIBLOG"
  search /
fi
dirs=()
for w in "${want[@]}"; do
  p=${found[$w]:-}
  echo "$w -> ${p:-NOT FOUND}" >>"$LIBLOG"
  [ -n "$p" ] || continue
  d=$(dirname "$p")
  [[ " ${dirs[*]} " == *" $d "* ]] || dirs+=("$d")
done
# The provider opens the unversioned libcudnn.so and libnvrtc.so: link them.
mkdir -p "$WORK/links"
[ -n "${found[libcudnn.so.9]:-}" ] && ln -sf "${found[libcudnn.so.9]}" "$WORK/links/libcudnn.so"
[ -n "${found[libnvrtc.so.13]:-}" ] && ln -sf "${found[libnvrtc.so.13]}" "$WORK/links/libnvrtc.so"
LDP="$G/ort:$G/lib:$WORK/links"
for d in "${dirs[@]}"; do LDP="$LDP:$d"; done
# Debian bookworm's libstdc++ (needs glibc 2.36) only where the host has none.
if ! ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6 '; then
  LDP="$LDP:$G/lib/fallback"
  echo "no libstdc++.so.6 on the host: using the packed one" >>"$LIBLOG"
fi
echo "LD_LIBRARY_PATH=$LDP" >>"$LIBLOG"
export ADMPO_ORT_LIB=$G/ort/libonnxruntime.so.1
export ADMPO_ORT_CUDA_PROVIDER=$G/ort/libonnxruntime_providers_cuda.so
export ADMPO_CACHE=$WORK/cache # doctor finds the GPU files (and their checksums) there
mkdir -p "$ADMPO_CACHE" && ln -sfn "$G/ort" "$ADMPO_CACHE/onnxruntime-gpu-1.29.0"
# ONNX Runtime lists a GPU for its CUDA provider only where /sys/class/drm
# has a cardN whose device/vendor is 0x10de (its Linux device discovery);
# without one the provider offers no device. Then the admpo commands run in
# a private mount namespace in which a stand-in /sys/class/drm holds such a
# card (unshare -m as root, else unshare -Urm), affecting nothing outside.
DRMLOG=$WORK/00-drm.log
WRAP=""
{
  echo "/sys/class/drm:"
  ls -l /sys/class/drm 2>&1 | head -n 20
  for c in /sys/class/drm/card*/device/vendor; do [ -f "$c" ] && echo "$c: $(cat "$c")"; done
} >"$DRMLOG" 2>&1
if ! grep -qs -x '0x10de' /sys/class/drm/card*/device/vendor; then
  pci=$(timeout 15 nvidia-smi --query-gpu=pci.device_id --format=csv,noheader 2>/dev/null | head -n 1 | tr 'A-F' 'a-f')
  dev=0x${pci:2:4}
  [ ${#dev} -eq 6 ] || dev=0x2330
  fake=$WORK/sysclass
  mkdir -p "$fake/drm/card0/device"
  echo 0x10de >"$fake/drm/card0/device/vendor"
  echo "$dev" >"$fake/drm/card0/device/device"
  target=/sys/class/drm
  src=$fake/drm
  if [ ! -d /sys/class/drm ]; then # no mount point: stand in for /sys/class itself (drm only)
    target=/sys/class
    src=$fake
  fi
  printf '#!/usr/bin/env bash\n# Runs "$@" with %s mounted on %s (private mount namespace).\nmount --bind %q %q || exit 97\nexec "$@"\n' \
    "$src" "$target" "$src" "$target" >"$WORK/fakedrm.sh"
  for u in "unshare -m" "unshare -Urm"; do
    # shellcheck disable=SC2086
    if timeout 10 $u bash "$WORK/fakedrm.sh" cat /sys/class/drm/card0/device/vendor 2>>"$DRMLOG" | grep -q 0x10de; then
      WRAP="$u bash $WORK/fakedrm.sh"
      break
    fi
  done
  if [ -n "$WRAP" ]; then
    note "[note] no NVIDIA card in /sys/class/drm (ONNX Runtime's GPU discovery): admpo runs under '$WRAP' with a stand-in card (vendor 0x10de, device $dev)"
  else
    note "[FAIL] no NVIDIA card in /sys/class/drm and no private mount namespace for a stand-in: the CUDA provider will offer no device (see $(basename "$DRMLOG"))"
  fi
else
  note "[ok]   /sys/class/drm lists an NVIDIA card (ONNX Runtime's GPU discovery)"
fi
sed 's/^/   | /' "$DRMLOG"
RUN="$WRAP env LD_LIBRARY_PATH='$LDP'"
sed 's/^/   | /' "$LIBLOG"
missing=()
for w in libcublas.so.13 libcublasLt.so.13 libcudart.so.13 libcurand.so.10 libcuda.so.1; do [ -z "${found[$w]:-}" ] && missing+=("$w"); done
if [ ${#missing[@]} -eq 0 ]; then note "[ok]   CUDA libraries found in ${#dirs[@]} folders"; else note "[FAIL] CUDA libraries missing: ${missing[*]}"; fi
pack

step ldd 15 "$RUN ldd '$G/ort/libonnxruntime_providers_cuda.so'; echo '--- not found (provider, admpo, infer.test):'; for f in '$G/ort/libonnxruntime_providers_cuda.so' '$G/admpo' '$G/infer.test'; do $RUN ldd \$f | grep 'not found'; done; echo '--- end'"
step doctor 30 "$RUN '$G/admpo' version; $RUN '$G/admpo' doctor"

# --- issue 32: the device layer's kernels and GEMM on CUDA against the CPU
# (device/cuda's test binary, where the payload has one), with its timings:
# the SAC update, the ADM step, BC's step and the ensemble's step (TestBC,
# TestEnsemble and their benchmarks, each against the CPU path), and the
# roll-out's GRU and head kernels' GB/s at 131072 rows x 200
# (BenchmarkRollKernels, issue 33's S3 and S4); TestRolloutPredict (issue
# 33's S5a, with the other tests) and BenchmarkRolloutPredict, rolldev's
# direct ADM forward at 131072 plans, run apart with 10 iterations.
if [ -x "$G/device.test" ]; then
  TAIL=40 step device-test 175 "cd '$G' && set -o pipefail && { ADMPO_GPU_TEST=1 $RUN ./device.test -test.v -test.timeout 140s -test.bench 'MLPStep|SAC|ADM|BCStep|Ensemble|RollKernels' -test.benchtime 2000x 2>&1; r=\$?; ADMPO_GPU_TEST=1 $RUN ./device.test -test.v -test.timeout 25s -test.run '^\$' -test.bench 'RolloutPredict' -test.benchtime 10x 2>&1 || r=1; exit \$r; } | tee '$OUT/device.txt' | grep -v -e '^ *=== RUN' -e '^ *--- PASS'"
else
  note "[skip] device-test: no device.test in the payload"
fi
# Issue 33's S5b, the first ADM-Roll on admpo's own device layer and its first
# ratio: rolldev's Engine (BenchmarkRollout: hopper's size, full windows, no
# row ends, horizon 5) ADMPO-ON and ADMPO-OFF (U^ADM) in its direct style
# and ADMPO-OFF in its incremental one (S6: offinc) at 10000 and 100000
# start rows in chunks of 32768 and 131072 (2 timed roll-outs each, after 2
# untimed; at most 100 s), and offinc over 1M rows in chunks of 131072 once
# (BenchmarkRolloutIncremental, 1 timed after 2 untimed, about 11.5 GB of
# device memory; at most 40 s), then PyTorch's direct engine
# (torch_rollout.py, eager, best of 2) at the same rows and chunks, and a
# table of device / PyTorch transitions/s into the summary (devroll.md in
# logs.tgz). TestRollout runs in device-test.
DEVROLL_ROWS=${DEVROLL_ROWS:-10000,100000}
DEVROLL_CHUNKS=${DEVROLL_CHUNKS:-32768 131072}
cat >"$WORK/devroll.py" <<'EOF4'
# devroll.py JSON: BenchmarkRollout's lines (devroll_bench.txt) beside
# torch_rollout.py's direct engine (devroll_torch_CHUNK.json) as a table.
import glob, json, os, re, sys
d = sys.argv[1]
dev, tor = {}, {}
pat = re.compile(r"^BenchmarkRollout(?:Incremental)?/(on|off|offinc)/rows=(\d+)/chunk=(\d+)\S*\s.*?([0-9.e+]+) transitions/s")
f = os.path.join(d, "devroll_bench.txt")
for line in open(f) if os.path.exists(f) else []:
    m = pat.match(line)
    if m:
        dev[(m[1], int(m[2]), int(m[3]))] = float(m[4])
for f in glob.glob(os.path.join(d, "devroll_torch_*.json")):
    chunk = int(re.search(r"_(\d+)\.json$", f)[1])
    try:
        t = json.load(open(f))
    except ValueError:
        continue
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    for r in t["rows"]:
        if r[i["engine"]] == "direct":
            style = "off" if "OFF" in r[i["style"]] else "on"
            tor[(style, r[i["rows"]], chunk)] = r[i["transitions/s"]]
print("| rolldev Engine vs PyTorch direct (eager) | rows | chunk | device t/s | PyTorch t/s | device / PyTorch |")
print("|---|---|---|---|---|---|")
label = {"on": "ADMPO-ON", "off": "ADMPO-OFF (U^ADM)", "offinc": "ADMPO-OFF (U^ADM), device incremental"}
for k in sorted(set(dev) | set(tor)):
    a, b = dev.get(k), tor.get(("off",) + k[1:] if k[0] == "offinc" else k)
    if a is None and k[2] >= k[1]:  # one chunk of all rows: the bench ran it at its smallest such chunk
        a = next((v for (s, n, c), v in sorted(dev.items()) if (s, n) == k[:2] and c >= n), None)
    f = lambda x: "-" if x is None else f"{x:,.0f}"
    print(f"| {label[k[0]]} | {k[1]} | {k[2]} | {f(a)} | {f(b)} | "
          f"{'-' if not (a and b) else f'{a / b:.2f}'} |")
EOF4
if [ -x "$G/device.test" ]; then
  TAIL=30 step device-rollout 220 "cd '$G' && r=0; ADMPO_GPU_TEST=1 $RUN ./device.test -test.v -test.run '^\$' -test.bench '^BenchmarkRollout\$' -test.benchtime 2x -test.timeout 100s >'$JSON/devroll_bench.txt' 2>&1 || r=1; ADMPO_GPU_TEST=1 $RUN ./device.test -test.v -test.run '^\$' -test.bench '^BenchmarkRolloutIncremental\$' -test.benchtime 1x -test.timeout 40s >>'$JSON/devroll_bench.txt' 2>&1 || r=1; grep -E '^(Benchmark|---|FAIL|panic)' '$JSON/devroll_bench.txt'; for c in $DEVROLL_CHUNKS; do timeout -k 5 35 python3 '$G/torch_rollout.py' --device cuda --engines direct --rows $DEVROLL_ROWS --repeats 2 --chunk-rows \$c --json >'$JSON/devroll_torch_'\$c.json || { echo \"torch_rollout.py, chunk \$c: failed\"; r=1; }; done; python3 '$WORK/devroll.py' '$JSON' | tee '$JSON/devroll.md'; exit \$r"
  [ -s "$JSON/devroll.md" ] && cat "$JSON/devroll.md" >>"$SUMMARY"
else
  note "[skip] device-rollout: no device.test in the payload"
fi
# PyTorch's SAC update and ADM train step on the same GPU (issue 32's baseline).
if grep -q -- '--device' "$G/torch_train.py" 2>/dev/null; then
  TAIL=30 step torch-train 100 "python3 '$G/torch_train.py' --device cuda --cuda-graph >'$JSON/torch_train_cuda.json' || { cat '$JSON/torch_train_cuda.json'; exit 1; }; cp '$JSON/torch_train_cuda.json' '$OUT/' && cat '$JSON/torch_train_cuda.json'"
fi
# admpo's own trainers on the GPU (issue 32): the device SAC update beside the
# CPU's in one process, and a short hopper SAC run with --device cuda and cpu.
TAIL=30 step bench-train-cuda 90 "$RUN '$G/admpo' bench train --device cuda --no-torch --iters 200 --json >'$JSON/bench_train_cuda.json' || { cat '$JSON/bench_train_cuda.json'; exit 1; }; cat '$JSON/bench_train_cuda.json'"
TAIL=24 step train-cuda 120 "for m in cuda cuda-graph cpu; do d=\${m%-graph}; g=0; [ \$m = cuda-graph ] && g=1; t=\$SECONDS; ADMPO_DEVICE_GRAPH=\$g $RUN '$G/admpo' train online --env hopper --algo sac --preset quick --steps 500 --seed 0 --device \$d --tensorboard=false --out '$WORK/run-'\$m >'$WORK/run-'\$m.log 2>&1 || { tail -n 20 '$WORK/run-'\$m.log; exit 1; }; echo \"--device \$d, ADMPO_DEVICE_GRAPH=\$g: \$((SECONDS - t)) s\"; tail -n 3 '$WORK/run-'\$m.log; done"
# Checkpoints move between devices (issue 32): train-cuda's cuda run resumes on
# the CPU and its CPU run on cuda, 100 env steps (1000 updates) further each.
TAIL=8 step resume-cross 60 "for p in cuda:cpu cpu:cuda; do from=\${p%%:*}; to=\${p#*:}; rm -rf '$WORK/resume-'\$from; cp -r '$WORK/run-'\$from '$WORK/resume-'\$from || exit 1; $RUN '$G/admpo' train online --resume '$WORK/resume-'\$from --steps 600 --device \$to --tensorboard=false >'$WORK/resume-'\$from.log 2>&1 || { tail -n 10 '$WORK/resume-'\$from.log; exit 1; }; echo \"\$from -> \$to: \$(grep -E 'eval return' '$WORK/resume-'\$from.log | tail -n 1)\"; done"
# The same quick SAC run for seeds 1-3 on cuda (graphs, the default) and, at
# the same time, on the host's CPU (issue 32: on 2026-11-28 seed 0 evaluated
# 12.3 at 1500 env steps on cuda against 199.2 on the CPU and 80-225 for seeds
# 0-5 on the CPU and emu): whether cuda's SAC learns like the CPU's.
TAIL=14 step train-cuda-seeds 100 "for s in 1 2 3; do $RUN '$G/admpo' train online --env hopper --algo sac --preset quick --steps 1000 --seed \$s --device cpu --tensorboard=false --out '$WORK/run-seed-cpu-'\$s >'$WORK/run-seed-cpu-'\$s.log 2>&1 & done; for s in 1 2 3; do $RUN '$G/admpo' train online --env hopper --algo sac --preset quick --steps 1000 --seed \$s --device cuda --tensorboard=false --out '$WORK/run-seed-cuda-'\$s >'$WORK/run-seed-cuda-'\$s.log 2>&1 || tail -n 5 '$WORK/run-seed-cuda-'\$s.log; done; wait; for d in cuda cpu; do for s in 1 2 3; do echo \"\$d seed \$s: \$(grep 'eval return' '$WORK/run-seed-'\$d-\$s.log | sed 's/ ± [0-9.]*//' | awk '{printf \"%s %s  \", \$2, \$5}')\"; done; done"

# rollout_s.py ORT_PROGRESS DEVICE_PROGRESS OUT_JSON: the roll-out seconds
# (the last record's time.rollout_s) of the ONNX Runtime and device runs.
cat >"$WORK/rollout_s.py" <<'PYEOF'
import json, sys
def last(path):
    try:
        recs = [json.loads(l) for l in open(path) if l.strip()]
        r = recs[-1]
        return r["time"]["rollout_s"], r.get("env_step")
    except Exception:
        return None, None
res = {}
for name, path in (("ort", sys.argv[1]), ("device", sys.argv[2])):
    s, step = last(path)
    res[name] = {"rollout_s": s, "env_step": step}
json.dump(res, open(sys.argv[3], "w"), indent=1)
f = lambda v: "-" if v is None else f"{v:.1f}"
print(f"roll-out seconds, hopper ADMPO-ON quick 2000 steps: ONNX Runtime {f(res['ort']['rollout_s'])} (env step {res['ort']['env_step']}), "
      f"device {f(res['device']['rollout_s'])} (env step {res['device']['env_step']})")
PYEOF

# An ADMPO-ON run on the device (the ADM fits and roll-outs beside the device
# SAC updates: a run allocates more than SAC alone, which once exposed a crash
# in cu's kernel launch under the garbage collector), and a time sample of
# the cpu preset (issue 32: the paper budget's hopper ADMPO-ON run) with --device cuda and --provider cuda, stopped
# with SIGINT after PAPER_S seconds (default 45; 90 until 2026-11-29): its log's fit and roll-out
# times and progress.jsonl's phase times extrapolate the whole run.
TAIL=20 step train-admpo-cuda 120 "t=\$SECONDS; $RUN '$G/admpo' train online --env hopper --algo admpo --preset quick --steps 2000 --seed 0 --device cuda --tensorboard=false --out '$WORK/run-admpo-cuda' >'$WORK/run-admpo-cuda.log' 2>&1 || { head -n 70 '$WORK/run-admpo-cuda.log' | tail -n 30; exit 1; }; echo \"\$((SECONDS - t)) s\"; grep -E 'model fit|done' '$WORK/run-admpo-cuda.log' | tail -n 5; cp '$WORK/run-admpo-cuda/progress.jsonl' '$JSON/admpo_cuda_quick_progress.jsonl'"
# Issue 33's S7: the same run with its ADM rolled out on the GPU (--rollout-device
# cuda: rolldev in the run's engine style, the task's termination on the
# device) right after, and the roll-out seconds of both runs
# (progress.jsonl's last time.rollout_s; "-" for a run that left none) into
# the summary and rolldev_train.json.
TAIL=12 step train-admpo-rolldev 120 "t=\$SECONDS; $RUN '$G/admpo' train online --env hopper --algo admpo --preset quick --steps 2000 --seed 0 --device cuda --rollout-device cuda --tensorboard=false --out '$WORK/run-admpo-rolldev' >'$WORK/run-admpo-rolldev.log' 2>&1 || { head -n 70 '$WORK/run-admpo-rolldev.log' | tail -n 30; exit 1; }; echo \"\$((SECONDS - t)) s\"; grep -E 'model fit|done' '$WORK/run-admpo-rolldev.log' | tail -n 3; cp '$WORK/run-admpo-rolldev/progress.jsonl' '$JSON/admpo_rolldev_quick_progress.jsonl'; python3 '$WORK/rollout_s.py' '$WORK/run-admpo-cuda/progress.jsonl' '$WORK/run-admpo-rolldev/progress.jsonl' '$JSON/rolldev_train.json' | tee -a '$SUMMARY'"
# MBPO's ensemble fits on the device (issue 32, ensdev) in a short quick-preset run.
TAIL=12 step train-mbpo-cuda 90 "t=\$SECONDS; $RUN '$G/admpo' train online --env hopper --algo mbpo --preset quick --steps 1000 --seed 0 --device cuda --tensorboard=false --out '$WORK/run-mbpo-cuda' >'$WORK/run-mbpo-cuda.log' 2>&1 || { head -n 70 '$WORK/run-mbpo-cuda.log' | tail -n 30; exit 1; }; echo \"\$((SECONDS - t)) s\"; grep -E 'model fit|done' '$WORK/run-mbpo-cuda.log' | tail -n 5; cp '$WORK/run-mbpo-cuda/progress.jsonl' '$JSON/mbpo_cuda_quick_progress.jsonl'"
PAPER_S=${PAPER_S:-45}
TAIL=30 step paper-cuda $((PAPER_S + 40)) "$RUN timeout -s INT $PAPER_S '$G/admpo' train online --env hopper --algo admpo --preset cpu --seed 0 --device cuda --provider cuda --blas-threads \$(nproc) --eval-every 250 --eval-episodes 2 --tensorboard=false --out '$WORK/run-paper-cuda' >'$WORK/run-paper-cuda.log' 2>&1; rc=\$?; echo \"admpo rc \$rc after at most ${PAPER_S} s\"; grep -E 'model fit|roll-out|interrupted|panic|fatal' '$WORK/run-paper-cuda.log' | tail -n 20; cp '$WORK/run-paper-cuda/progress.jsonl' '$JSON/paper_cuda_progress.jsonl' || { tail -n 20 '$WORK/run-paper-cuda.log'; exit 1; }; ! grep -q -E 'panic|fatal' '$WORK/run-paper-cuda.log'"

# --- issue 33: which operator of the packed and step graphs crashes the CUDA provider.
if [ -f "$G/gpu_bisect.sh" ]; then
  export RUN G OUT WORK
  TAIL=40 step bisect 120 "bash '$G/gpu_bisect.sh'"
fi

TAIL=40 step gpu-test 120 "cd '$G' && ADMPO_GPU_TEST=1 $RUN ./infer.test -test.run '^TestCUDA(Policy|Rollout|RolloutBound)\$' -test.v -test.timeout 110s"
rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 98 ] && grep -q -i -e 'use_tf32' -e 'provider options' "$WORK"/*gpu-test.log; then
  note "the CUDA provider refused its options: again with ADMPO_CUDA_EP_OPTIONS=none (TF32 may then be on)"
  export ADMPO_CUDA_EP_OPTIONS=none
  TAIL=40 step gpu-test-no-options 100 "cd '$G' && ADMPO_GPU_TEST=1 $RUN ./infer.test -test.run '^TestCUDA(Policy|Rollout|RolloutBound)\$' -test.v -test.timeout 90s"
fi
# Where ONNX Runtime places the roll-out graphs' nodes on CUDA (issue 33: the
# bound incremental engine's time grows linearly in rows, ~2.7 µs per
# row-step on the H100, far above the GPU's arithmetic): a node left on the
# CPU provider, or the Memcpy nodes around it, would explain that. The
# session's verbose log lists the placements; each graph also runs against
# the CPU (TestCUDAGraphFile, 1e-4).
TAIL=30 step placement 60 "mkdir -p '$WORK/graphs' && cd '$G' && ADMPO_GPU_TEST=1 ADMPO_GPU_EXPORT='$WORK/graphs' $RUN ./infer.test -test.run '^TestGPUExportGraphs\$' >/dev/null 2>&1 || { echo 'graph export failed'; exit 1; }; for g in hopper_step hopper_packed hopper_unrolled hopper_gru hopper_stepgru; do echo \"== \$g\"; ADMPO_GPU_TEST=1 ADMPO_GPU_GRAPH='$WORK/graphs/'\$g.onnx ADMPO_GPU_GRAPH_OPTS=verbose $RUN ./infer.test -test.run '^TestCUDAGraphFile\$' >'$WORK/placement-'\$g.log 2>&1; grep -E 'placed on|Memcpy|not found in registr|GRAPHFILE (RESULT|ERROR)' '$WORK/placement-'\$g.log | sed 's/^.*\\] //' | cut -c1-300 | head -n 12; done"

bench() { # bench NAME TIMEOUT ARGS: admpo bench rollout ARGS --json into $JSON/NAME.json
  step "$1" "$2" "$RUN '$G/admpo' bench rollout $3 --json >'$JSON/$1.json' || { cat '$JSON/$1.json'; exit 1; }; python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); [print(*r[:5]) for r in t[\"rows\"]]' '$JSON/$1.json'"
}
torchb() { # torchb NAME TIMEOUT ARGS: torch_rollout.py ARGS --json into $JSON/NAME.json (host libraries only)
  step "$1" "$2" "python3 '$G/torch_rollout.py' $3 --json >'$JSON/$1.json' || { cat '$JSON/$1.json'; exit 1; }; python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(t[\"environment\"]); [print(*r[:5]) for r in t[\"rows\"]]' '$JSON/$1.json'"
}
SMALL=${ROWS_SMALL:-10000,100000}
LARGE=${ROWS_LARGE:-1000000}
FORM=${BENCH_FORM:-packed}
ENGINES=${BENCH_ENGINES:-direct}
# PyTorch rolls as many start rows together as admpo's CUDA engines do by
# default (infer's cudaChunkRows since 2026-11-28; 8192 before), so that the
# ratio table compares equal chunks.
TORCH_CHUNK=${TORCH_CHUNK_ROWS:-32768}
# With them, admpo's device roll-out (issue 33's S7: bench rollout --device
# cuda, rolldev on the GPU at its default 131072-row chunks; DEVICE_ENGINES,
# default device-direct,device-incremental, empty: none) from the same
# starts: ratios.md gives it its own columns (device-direct in direct's row,
# device-incremental in incremental's) and ratios.json counts it among
# admpo's engines. The two steps' timeouts grew for it (75 -> 90 -> 110,
# 130 -> 150 -> 190: 20 and 40 s for device-incremental).
DEVICE_ENGINES=${DEVICE_ENGINES-device-direct,device-incremental}
DEV_ARGS=""
[ -n "$DEVICE_ENGINES" ] && DEV_ARGS="--device cuda"
bench admpo_cuda_small 110 "--provider cuda --engines $ENGINES${DEVICE_ENGINES:+,$DEVICE_ENGINES} $DEV_ARGS --form $FORM --rows $SMALL"
torchb torch_cuda_small 60 "--device cuda --rows $SMALL --chunk-rows $TORCH_CHUNK --check"
# Issue 33: the incremental engine on CUDA with its GRU states in device
# memory (--binding on: I/O binding; it fails rather than fall back) and,
# for comparison in the same check, copied through host memory every step
# (--binding off, the path before; inccopy_*.json, which the ratio table
# leaves out). A table of the two goes into the summary.
bench admpo_cuda_incremental 75 "--provider cuda --engines incremental --binding on --rows $SMALL"
step incremental_copied 75 "$RUN '$G/admpo' bench rollout --provider cuda --engines incremental --binding off --rows $SMALL --json >'$JSON/inccopy_cuda.json' || { cat '$JSON/inccopy_cuda.json'; exit 1; }"
python3 - "$JSON" >>"$SUMMARY" 2>&1 <<'PYEOF'
import json, os, sys
d = sys.argv[1]
res = {}
for name, side in (("admpo_cuda_incremental", "bound"), ("inccopy_cuda", "copied")):
    f = os.path.join(d, name + ".json")
    if not os.path.exists(f):
        continue
    t = json.load(open(f))
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "rows", "transitions/s")}
    for r in t["rows"]:
        res.setdefault((r[i["style"]], r[i["rows"]]), {})[side] = r[i["transitions/s"]]
    print(f"[note] {name}: incremental state {t.get('environment', {}).get('incremental state', '?')}")
print("| incremental on CUDA | rows | bound t/s | copied t/s | bound / copied |")
print("|---|---|---|---|---|")
for (style, n), v in sorted(res.items()):
    b, c = v.get("bound"), v.get("copied")
    f = lambda x: "-" if x is None else f"{x:,.0f}"
    print(f"| {style} | {n} | {f(b)} | {f(c)} | {'-' if not (b and c) else f'{b / c:.2f}'} |")
PYEOF

# The GRU-op form on CUDA (issue 33; default step gru_form): ONNX Runtime's
# CUDA GRU runs cuDNN's RNN, whose fused gate kernel is what the element-wise
# gates of the packed and unrolled forms lack (rollout_diag, 2026-11-28: the
# GPU's execution of those memory-bound gates bounds the roll-out), and the
# direct graph takes each row's k as a host-side sequence_lens, so it needs
# none of the packed form's 13 NonZero synchronisations; the incremental
# engine's step graph in that form (one GRU op per layer, the fresh rows'
# state zero-padded) has no NonZero either. Measured only once, on
# 2026-11-26 (direct: 10k + 100k + 1M rows did not finish in 110 s, 8192-row
# chunks, states copied), never profiled. (1) TestCUDARollout and
# TestCUDARolloutBound with the GRU-op graphs (both engines, within 1e-4 of
# the CPU); (2) admpo bench rollout --form gru, both engines (incremental
# bound), at 10k rows (a gauge: the rest is skipped when it fails) and at
# GRU_ROWS (100k) rows with the default chunks and with 131072-row chunks;
# (3) ONNX Runtime's profile of the 131072-row run, per operator; (4) a table
# beside the default graphs (admpo_cuda_small, admpo_cuda_incremental) and
# PyTorch (torch_cuda_small) of this call. Files gru/*.json, which the ratio
# table leaves out.
GRU_ROWS=${GRU_ROWS:-100000}
cat >"$WORK/gru_form.sh" <<'EOF3'
# gru_form.sh (env: RUN G D JSON ROWS): the measurements above into $D.
run() { eval "$RUN" '"$@"'; }
cd "$G" || exit 1
ADMPO_GPU_TEST=1 ADMPO_GPU_FORM=gru ADMPO_GPU_ENGINES=direct,incremental run ./infer.test -test.run '^TestCUDARollout(Bound)?$' -test.v -test.timeout 50s >"$D/test.log" 2>&1
rc=$?
echo "TestCUDARollout, TestCUDARolloutBound, GRU-op graphs: rc $rc ($(grep -c -e '^ *--- PASS' "$D/test.log") cases pass, $(grep -c -e '^ *--- FAIL' "$D/test.log") fail)"
grep -e '^ *--- FAIL' -e 'cuda vs cpu' "$D/test.log" | head -n 8
if [ $rc -ne 0 ]; then # cuDNN's RNN in CUDNN_DEFAULT_MATH may use TF32 on A100 and later: once more without
  NVIDIA_TF32_OVERRIDE=0 ADMPO_GPU_TEST=1 ADMPO_GPU_FORM=gru ADMPO_GPU_ENGINES=direct,incremental run ./infer.test -test.run '^TestCUDARollout(Bound)?$' -test.v -test.timeout 50s >"$D/test-notf32.log" 2>&1
  echo "the same with NVIDIA_TF32_OVERRIDE=0: rc $? ($(grep -c -e '^ *--- PASS' "$D/test-notf32.log") pass, $(grep -c -e '^ *--- FAIL' "$D/test-notf32.log") fail)"
fi
b() { # b NAME ROWS CHUNK [ARGS...]: one bench into $D/NAME.json, 45 s at most
  local name=$1 rows=$2 chunk=$3 t=$SECONDS
  shift 3
  if run timeout -k 5 45 "$G/admpo" bench rollout --provider cuda --engines direct,incremental --form gru --rows "$rows" \
    --repeats 1 --chunk-rows "$chunk" --json "$@" >"$D/$name.json" 2>"$D/$name.err"; then
    echo "$name ($rows rows, chunk $chunk): $((SECONDS - t)) s"
  else
    echo "$name ($rows rows, chunk $chunk) failed or timed out after $((SECONDS - t)) s:"; tail -n 5 "$D/$name.err"; rm -f "$D/$name.json"; return 1
  fi
}
b gru_10k 10000 0 || exit 1
b gru_default "$ROWS" 0
b gru_131072 "$ROWS" 131072
mkdir -p "$D/ort"
b gru_prof "$ROWS" 131072 --ort-profile "$D/ort/p" && ls "$D"/ort/*.json >/dev/null 2>&1 && {
  echo "ONNX Runtime's profile of gru_prof (both engines' sessions; host-side node times):"
  python3 "$G/gpu_ort_profile.py" "$D"/ort/*.json | head -n 30
}
rm -rf "$D/ort"
python3 - "$D" "$JSON" "$ROWS" <<'PY'
import json, os, sys
d, j, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
def tps(path):
    try:
        t = json.load(open(path))
    except Exception:
        return {}
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    return {(r[i["style"]], r[i["engine"]]): r[i["transitions/s"]] for r in t["rows"] if r[i["rows"]] == rows}
g, g131 = tps(os.path.join(d, "gru_default.json")), tps(os.path.join(d, "gru_131072.json"))
base = {**tps(os.path.join(j, "admpo_cuda_small.json")), **tps(os.path.join(j, "admpo_cuda_incremental.json"))}
torch = {}
for (s, e), v in tps(os.path.join(j, "torch_cuda_small.json")).items():
    torch[s] = max(torch.get(s, 0), v)
f = lambda x: "-" if not x else f"{x:,.0f}"
r = lambda x, y: "-" if not (x and y) else f"{x / y:.2f}"
print(f"| {rows} rows | engine | GRU-op graphs t/s (default chunks) | GRU op, 131072-row chunks | default graphs t/s (packed / unrolled step) | PyTorch's faster t/s | GRU op / default | best GRU op / PyTorch |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(set(g) | set(g131) | set(base)):
    best = max(g.get(k, 0), g131.get(k, 0))
    print(f"| {k[0]} | {k[1]} | {f(g.get(k))} | {f(g131.get(k))} | {f(base.get(k))} | {f(torch.get(k[0]))} | {r(g.get(k), base.get(k))} | {r(best, torch.get(k[0]))} |")
PY
EOF3
TAIL=40 step gru_form 160 "RUN=\"$RUN\" G='$G' D='$JSON/gru' JSON='$JSON' ROWS='$GRU_ROWS' bash -c 'mkdir -p \"\$D\" && bash $WORK/gru_form.sh' | tee '$JSON/gru.md'" && \
  { echo "== gru_form (issue 33)"; cat "$JSON/gru.md"; } >>"$SUMMARY"

# Larger chunks (issue 33): both sides roll CHUNK_ROWS (default 131072) start
# rows together instead of 8192 (fewer, larger ONNX Runtime runs and kernel
# launches); written as chunks_*.json, which the ratio table below leaves out
# (it compares the default chunk), and printed as their own table.
CHUNK=${CHUNK_ROWS:-131072}
step admpo_cuda_chunks 90 "$RUN '$G/admpo' bench rollout --provider cuda --engines direct --form $FORM --rows 100000,1000000 --repeats 1 --chunk-rows $CHUNK --json >'$JSON/chunks_admpo.json' || { cat '$JSON/chunks_admpo.json'; exit 1; }"
step torch_cuda_chunks 75 "python3 '$G/torch_rollout.py' --device cuda --rows 100000,1000000 --repeats 1 --chunk-rows $CHUNK --json >'$JSON/chunks_torch.json' || { cat '$JSON/chunks_torch.json'; exit 1; }"
python3 - "$JSON" "$CHUNK" >"$OUT/chunks.md" 2>&1 <<'PYEOF'
import json, os, sys
d, chunk = sys.argv[1], sys.argv[2]
rows = {}
for side in ("admpo", "torch"):
    f = os.path.join(d, f"chunks_{side}.json")
    if not os.path.exists(f):
        continue
    t = json.load(open(f))
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    for r in t["rows"]:
        rows.setdefault((r[i["style"]], r[i["rows"]]), {})[(side, r[i["engine"]])] = r[i["transitions/s"]]
print(f"| style | rows | admpo direct t/s | PyTorch direct t/s | PyTorch incremental t/s | admpo / PyTorch's faster | (chunk {chunk} rows) |")
print("|---|---|---|---|---|---|---|")
for (style, n), v in sorted(rows.items()):
    a = v.get(("admpo", "direct"))
    p = max([x for k, x in v.items() if k[0] == "torch"] or [0])
    f = lambda x: "-" if x is None else f"{x:,.0f}"
    print(f"| {style} | {n} | {f(a)} | {f(v.get(('torch', 'direct')))} | {f(v.get(('torch', 'incremental')))} | {'-' if not (a and p) else f'{a / p:.2f}'} | |")
PYEOF

# 1M rows at the default chunk (measured on 2026-11-26/27; after the chunk sweep,
# so a tight budget cuts these first), and the CPU bench when named.
bench admpo_cuda_1m 190 "--provider cuda --engines $ENGINES${DEVICE_ENGINES:+,$DEVICE_ENGINES} $DEV_ARGS --form $FORM --rows $LARGE --repeats 1"
torchb torch_cuda_1m 60 "--device cuda --rows $LARGE --repeats 1 --chunk-rows $TORCH_CHUNK"
bench admpo_cpu 75 "--provider cpu --rows 10000"
# Compiled PyTorch beside eager (issue 33: "record also a CUDA-graph or
# compiled PyTorch"): torch_rollout.py --compile (torch.compile of the
# policy, GRU cell and head) at COMPILED_ROWS (100k) rows, both engines, the same chunks as
# the eager baseline; compiled_torch.json, which the ratio table leaves out.
# The summary gets eager (torch_cuda_small) and compiled side by side.
COMPILED_ROWS=${COMPILED_ROWS:-100000}
step torch_cuda_compiled 100 "python3 '$G/torch_rollout.py' --device cuda --rows $COMPILED_ROWS --chunk-rows $TORCH_CHUNK --compile --json >'$JSON/compiled_torch.json' || { cat '$JSON/compiled_torch.json'; exit 1; }; python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(t[\"environment\"]); [print(*r[:5]) for r in t[\"rows\"]]' '$JSON/compiled_torch.json'" && \
python3 - "$JSON" >>"$SUMMARY" 2>&1 <<'PYEOF'
import json, os, sys
d = sys.argv[1]
def rows(f):
    t = json.load(open(os.path.join(d, f)))
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    return {(r[i["style"]], r[i["engine"]], r[i["rows"]]): r[i["transitions/s"]] for r in t["rows"]}
try:
    e, c = rows("torch_cuda_small.json"), rows("compiled_torch.json")
except Exception as err:
    print(f"[note] compiled PyTorch table: {err}")
    sys.exit(0)
print("| PyTorch on CUDA | engine | rows | eager t/s | torch.compile t/s | compiled / eager |")
print("|---|---|---|---|---|---|")
for k in sorted(c):
    x = e.get(k)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {'-' if x is None else f'{x:,.0f}'} | {c[k]:,.0f} | {'-' if not x else f'{c[k] / x:.2f}'} |")
PYEOF

# The engines' split on CUDA (optional: GPU_CHECK_STEPS="split_sweep"): admpo
# bench rollout, both engines (the incremental one bound), both styles, at
# SWEEP_ROWS (100000) rows, once per --workers in SWEEP_WORKERS ("1 2 4":
# concurrent ONNX Runtime calls, each on a piece of a step's rows; 4 is the
# CUDA default since 2026-11-28) and --chunk-rows in SWEEP_CHUNKS ("8192 32768
# 131072": start rows per roll-out step; 32768 is the CUDA default), each run at most 40s, into
# split_W_C.json (the ratio table leaves them out). The summary gets a table
# of every setting's transitions/s, the fastest per style and engine marked.
SWEEP_ROWS=${SWEEP_ROWS:-100000}
SWEEP_WORKERS=${SWEEP_WORKERS:-1 2 4}
SWEEP_CHUNKS=${SWEEP_CHUNKS:-8192 32768 131072}
step split_sweep 240 "for w in $SWEEP_WORKERS; do for c in $SWEEP_CHUNKS; do echo \"== workers \$w, chunk rows \$c\"; timeout -k 5 40 $RUN '$G/admpo' bench rollout --provider cuda --engines direct,incremental --form $FORM --rows $SWEEP_ROWS --repeats 1 --workers \$w --chunk-rows \$c --json >'$JSON/split_'\$w'_'\$c'.json' || { echo \"workers \$w, chunk rows \$c failed\"; cat '$JSON/split_'\$w'_'\$c'.json'; rm -f '$JSON/split_'\$w'_'\$c'.json'; }; done; done; ls '$JSON' | grep -q '^split_'"
# Where a CUDA roll-out's time goes on the host (optional:
# GPU_CHECK_STEPS="rollout_profile"): a Go CPU profile of admpo bench rollout
# --provider cuda, both engines, SWEEP_ROWS rows, into
# rollout_cuda.pprof (in logs.tgz; `go tool pprof -top -tagfocus
# engine=incremental rollout_cuda.pprof` reads it on any machine):
# runtime.cgocall is ONNX Runtime (incl. its waits on the GPU), the rest
# admpo's host work.
step rollout_profile 60 "$RUN '$G/admpo' bench rollout --provider cuda --engines direct,incremental --form $FORM --rows $SWEEP_ROWS --repeats 1 --cpuprofile '$JSON/rollout_cuda.pprof' --json >'$JSON/profile_cuda.json' || { cat '$JSON/profile_cuda.json'; exit 1; }; ls -l '$JSON/rollout_cuda.pprof'"
python3 - "$JSON" >>"$SUMMARY" 2>&1 <<'PYEOF'
import glob, json, os, sys
res = {}
for f in glob.glob(os.path.join(sys.argv[1], "split_*_*.json")):
    w, c = os.path.basename(f)[len("split_"):-len(".json")].split("_")
    try:
        t = json.load(open(f))
    except Exception:
        continue
    col = t["columns"]
    i = {k: col.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    for r in t["rows"]:
        res.setdefault((r[i["style"]], r[i["engine"]], r[i["rows"]]), []).append((int(w), int(c), r[i["transitions/s"]]))
if res:
    print("| split on CUDA | engine | rows | workers | chunk rows | t/s | |")
    print("|---|---|---|---|---|---|---|")
    for k in sorted(res):
        best = max(v[2] for v in res[k])
        for w, c, tps in sorted(res[k]):
            print(f"| {k[0]} | {k[1]} | {k[2]} | {w} | {c} | {tps:,.0f} | {'fastest' if tps == best else ''} |")
PYEOF

# Where a CUDA roll-out's time goes inside ONNX Runtime and on the GPU
# (optional: GPU_CHECK_STEPS="rollout_diag"; issue 33: the 2026-11-28 H200
# profile put ~50% of the host's samples in ONNX Runtime's calls, and with
# 131072-row chunks PyTorch ran ~3x admpo's transitions/s, so the time is in
# ONNX Runtime's execution). At SWEEP_ROWS rows, DIAG_CHUNK (131072) chunk
# rows, direct engine, both styles: (1) the GPU's utilisation (nvidia-smi
# every 50 ms) while admpo and while torch_rollout.py run: "busy" is the
# mean over the samples above 0 (the set-up leaves the GPU idle); a GPU far
# from busy under admpo means the host side (launches, syncs) bounds it;
# (2) admpo again with ADMPO_CUDA_EP_OPTIONS=use_tf32=1 (TF32 products: much
# faster means the matrix products bound it); (3) ONNX Runtime's own profile
# of admpo's run (--ort-profile), summed by gpu_ort_profile.py per operator
# into ort_profile.md (node times are host side with CUDA: launches, and
# waits where a node syncs). Only the summaries come back.
DIAG_CHUNK=${DIAG_CHUNK:-131072}
cat >"$WORK/rollout_diag.sh" <<'EOF2'
# rollout_diag.sh (env: RUN G D FORM ROWS CHUNK): the three measurements
# above into $D, and their tables on stdout.
run() { eval "$RUN" '"$@"'; }
# util LABEL CMD...: CMD's stdout into $D/LABEL.json while nvidia-smi samples
# the GPU's utilisation every 50 ms; prints the samples' share above 0, the
# mean over those (busy) and the maximum.
util() {
  local label=$1 f p rc
  shift
  f=$D/util-$label.csv
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 50 >"$f" 2>/dev/null &
  p=$!
  "$@" >"$D/$label.json" 2>"$D/$label.err"
  rc=$?
  kill $p 2>/dev/null
  wait $p 2>/dev/null
  awk -v l="$label" '$1 ~ /^[0-9]+$/ { n++; if ($1 > 0) { b++; s += $1 }; if ($1 > mx) mx = $1 }
    END { printf "GPU utilisation, %s: %d samples, %.0f%% above 0, busy mean %.0f%%, max %d%%\n", l, n, n ? 100 * b / n : 0, b ? s / b : 0, mx }' "$f"
  [ $rc = 0 ] || { echo "$label failed (rc $rc):"; tail -n 5 "$D/$label.err"; }
}
bench=(bench rollout --provider cuda --engines direct --form "$FORM" --rows "$ROWS" --chunk-rows "$CHUNK" --json)
util admpo run "$G/admpo" "${bench[@]}" --repeats 2
util torch python3 "$G/torch_rollout.py" --device cuda --engines direct --rows "$ROWS" --repeats 2 --chunk-rows "$CHUNK" --json
ADMPO_CUDA_EP_OPTIONS=use_tf32=1 util admpo_tf32 run "$G/admpo" "${bench[@]}" --repeats 2
mkdir -p "$D/ort"
util admpo_prof run "$G/admpo" "${bench[@]}" --repeats 1 --ort-profile "$D/ort/p"
python3 - "$D" "$CHUNK" <<'PY'
import json, os, sys
d, chunk = sys.argv[1], sys.argv[2]
def tps(name):
    try:
        t = json.load(open(os.path.join(d, name + ".json")))
    except Exception:
        return {}
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "transitions/s")}
    return {r[i["style"]]: r[i["transitions/s"]] for r in t["rows"] if r[i["engine"]] == "direct"}
a, t, a32, ap = (tps(n) for n in ("admpo", "torch", "admpo_tf32", "admpo_prof"))
f = lambda x: "-" if x is None else f"{x:,.0f}"
r = lambda x, y: "-" if not (x and y) else f"{x / y:.2f}"
print(f"| direct, {chunk}-row chunks | admpo t/s | admpo TF32 t/s | admpo profiled t/s | PyTorch t/s | admpo / PyTorch | TF32 / float32 |")
print("|---|---|---|---|---|---|---|")
for s in sorted(set(a) | set(t)):
    print(f"| {s} | {f(a.get(s))} | {f(a32.get(s))} | {f(ap.get(s))} | {f(t.get(s))} | {r(a.get(s), t.get(s))} | {r(a32.get(s), a.get(s))} |")
PY
if ls "$D"/ort/*.json >/dev/null 2>&1; then
  echo
  echo "ONNX Runtime's profile of the admpo_prof run (all its sessions; host-side node times):"
  python3 "$G/gpu_ort_profile.py" "$D"/ort/*.json | head -n 40
  du -sh "$D/ort"
  rm -rf "$D/ort"
fi
EOF2
TAIL=60 step rollout_diag 150 "RUN=\"$RUN\" G='$G' D='$JSON/diag' FORM='$FORM' ROWS='$SWEEP_ROWS' CHUNK='$DIAG_CHUNK' bash -c 'mkdir -p \"\$D\" && bash $WORK/rollout_diag.sh' | tee '$JSON/diag.md'" && \
  { echo "== rollout_diag (issue 33)"; cat "$JSON/diag.md"; } >>"$SUMMARY"

# --- ratios: admpo transitions/s over PyTorch's, same style, engine and rows
cat >"$WORK/ratios.py" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
res = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(f)[:-5]
    if not (name.startswith("admpo_") or name.startswith("torch_cuda")):
        continue
    side = "torch" if name.startswith("torch") else ("admpo_cpu" if name.startswith("admpo_cpu") else "admpo_cuda")
    try:
        t = json.load(open(f))
    except Exception as e:
        print(f"{name}: unreadable ({e})")
        continue
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s")}
    for r in t["rows"]:
        engine, s = r[i["engine"]], side
        if engine.startswith("device-"):  # admpo's device roll-out (--device cuda): its own column
            engine, s = engine[len("device-"):], "admpo_device"
        res.setdefault((r[i["style"]], engine, r[i["rows"]]), {})[s] = r[i["transitions/s"]]
def f(x):
    return "-" if x is None else f"{x:,.0f}"
def q(a, b):
    return "-" if not (a and b) else f"{a / b:.2f}"
lines = ["| style | engine | rows | admpo CUDA t/s | PyTorch CUDA t/s | admpo / PyTorch | admpo device t/s | device / PyTorch | admpo CPU (all cores) t/s | admpo CUDA / CPU |",
         "|---|---|---|---|---|---|---|---|---|---|"]
for (style, engine, rows) in sorted(res, key=lambda k: (k[0], k[1], k[2])):
    v = res[(style, engine, rows)]
    a, p, c, d = v.get("admpo_cuda"), v.get("torch"), v.get("admpo_cpu"), v.get("admpo_device")
    lines.append(f"| {style} | {engine} | {rows} | {f(a)} | {f(p)} | {q(a, p)} | {f(d)} | {q(d, p)} | {f(c)} | {q(a, c)} |")
print("\n".join(lines))
# ratios.json (issue 33): for 100k and 1M rows, with and without U^ADM, each
# side's faster engine and admpo / PyTorch.
if len(sys.argv) > 2:
    summary = []
    for style in sorted({k[0] for k in res}):
        for rows in (100000, 1000000):
            best = {}
            for (s2, engine, r2), v in res.items():
                if s2 != style or r2 != rows:
                    continue
                for side, label in (("admpo_cuda", engine), ("admpo_device", "device-" + engine), ("torch", engine)):
                    key = "torch" if side == "torch" else "admpo_cuda"  # the device roll-out is admpo's too
                    if v.get(side) and v[side] > best.get(key, (0, ""))[0]:
                        best[key] = (v[side], label)
            a, p = best.get("admpo_cuda"), best.get("torch")
            summary.append({"style": style, "rows": rows,
                            "admpo_tps": a and a[0], "admpo_engine": a and a[1],
                            "torch_tps": p and p[0], "torch_engine": p and p[1],
                            "ratio": (a[0] / p[0]) if a and p else None})
    with open(sys.argv[2], "w") as fh:
        json.dump({"what": "admpo CUDA / PyTorch CUDA ADM-Roll transitions/s, each side's faster engine (default chunks; admpo's engines include its device roll-out, device-*)",
                   "rows": summary}, fh, indent=1)
EOF
python3 "$WORK/ratios.py" "$JSON" "$OUT/ratios.json" >"$OUT/ratios.md" 2>&1
cp "$OUT/ratios.md" "$WORK/"
pack
echo
echo "== summary ($((SECONDS - T0))s; files in $OUT: $(ls "$OUT" | tr '\n' ' '))"
cat "$SUMMARY"
echo
echo "== admpo / PyTorch ADM-Roll transitions/s (ratios.md)"
cat "$OUT/ratios.md"
if [ -s "$OUT/chunks.md" ]; then
  echo
  echo "== with ${CHUNK}-row chunks (chunks.md)"
  cat "$OUT/chunks.md"
fi
