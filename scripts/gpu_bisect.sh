#!/usr/bin/env bash
# Finds the ONNX node behind the CUDA provider's crash on the packed ADM graph
# and the step graph (issue 33), on a GPU host with bash and python3 (onnx,
# numpy); no Go. From a payload folder G (scripts/gpu_pack.sh's) holding
# infer.test (an admpo_cuda build of infer's tests), ort/ (ONNX Runtime 1.29
# and its CUDA provider) and lib/, with gpu_bisect.py beside this script:
#
#   bash G/gpu_bisect.sh [INFER_TEST]       # or: G=/tmp/g bash scripts/gpu_bisect.sh
#
# 1. infer.test's TestGPUExportGraphs writes the graphs of TestCUDARollout's
#    models with the inputs of their first run (small_packed, small_step,
#    hopper_packed, hopper_step and the unrolled control small_unrolled) into
#    $WORK/graphs, unless GRAPHS names a folder that holds them already.
# 2. gpu_bisect.py runs each target through TestCUDAGraphFile (CPU vs the
#    provider, 1e-4), searches for the first node prefix that crashes or
#    mismatches, prints that node, runs it and the suspects as one-node graphs
#    with the values the CPU computed, tries the full graph with other
#    session options and inputs, and runs the smallest crashing graph under
#    cuda-gdb for a native backtrace. Every try is its own process under
#    `timeout`; the whole script keeps within BUDGET seconds.
#
# Variables (all optional):
#   RUN         wrapper before each infer.test, as gpu_check.sh's $RUN (e.g.
#               "unshare -m bash /tmp/x/fakedrm.sh env LD_LIBRARY_PATH='...'").
#               Unset with PROVIDER=cuda: built here from the CUDA 13 libraries
#               of python3's nvidia packages (and /usr/local/nvidia/lib64), with
#               a stand-in /sys/class/drm card where the host lists none.
#   OUT         report folder (default /tmp/gpu_out): bisect.txt, bisect_logs.tgz
#   BUDGET      seconds for the whole script (default 100)
#   TRY_TIMEOUT seconds per try (default 25); PAR tries at once (default 8)
#   TARGETS     graphs to bisect (default "small_packed small_step hopper_packed hopper_step")
#   CONTROLS    graphs expected to pass, run first (default small_unrolled)
#   PROVIDER    cuda (default) or cpu (a second CPU session: tests the script
#               without a GPU, with SIMULATE_CRASH / SIMULATE_MISMATCH = op types
#               that the runner then treats as crashing / mismatching)
#   PYTHON      python3 with onnx and numpy (default python3)
#   GDB         debugger for a native backtrace of one crashing graph per target
#               (default: cuda-gdb if found, else gdb; GDB= for none)
# ADMPO_ORT_LIB and ADMPO_ORT_CUDA_PROVIDER default to G/ort's libraries.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # gpu_bisect.py lies beside this script
G=${G:-$HERE}
INFER_TEST=$(realpath "${1:-${INFER_TEST:-$G/infer.test}}")
OUT=${OUT:-/tmp/gpu_out}
BUDGET=${BUDGET:-100}
PROVIDER=${PROVIDER:-cuda}
PYTHON=${PYTHON:-python3}
TARGETS=${TARGETS:-small_packed small_step hopper_packed hopper_step}
CONTROLS=${CONTROLS-small_unrolled}
WORK=$(mktemp -d /tmp/gpu_bisect.XXXX)
T0=$SECONDS
mkdir -p "$OUT"
say() { printf 'gpu_bisect.sh: %s\n' "$*"; }

[ -x "$INFER_TEST" ] || { say "no executable infer.test at $INFER_TEST"; exit 2; }
"$PYTHON" -c 'import onnx, numpy' 2>/dev/null || { say "$PYTHON cannot import onnx and numpy"; exit 2; }
if [ -d "$G/ort" ]; then
  export ADMPO_ORT_LIB=${ADMPO_ORT_LIB:-$G/ort/libonnxruntime.so.1}
  export ADMPO_ORT_CUDA_PROVIDER=${ADMPO_ORT_CUDA_PROVIDER:-$G/ort/libonnxruntime_providers_cuda.so}
fi
export SIMULATE_CRASH=${SIMULATE_CRASH:-} SIMULATE_MISMATCH=${SIMULATE_MISMATCH:-}
export ADMPO_GPU_GRAPH_SIMULATE_CRASH=$SIMULATE_CRASH ADMPO_GPU_GRAPH_SIMULATE_MISMATCH=$SIMULATE_MISMATCH

# --- the wrapper: CUDA 13 libraries on the loader's path, a stand-in GPU in
# /sys/class/drm where ONNX Runtime's device discovery would find none
# (gpu_check.sh does the same, with a wider library search).
if [ -z "${RUN+x}" ] && [ "$PROVIDER" = cuda ]; then
  LDP="$G/ort:$G/lib:$WORK/links"
  mkdir -p "$WORK/links"
  roots=$(timeout 20 "$PYTHON" -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
  roots="$roots $(echo /opt/torch/.venv/lib/python3*/site-packages/nvidia)"
  libdirs=()
  for r in $roots; do libdirs+=("$r"/*/lib); done
  for d in "${libdirs[@]}" /usr/local/cuda/lib64 /usr/local/nvidia/lib64; do
    [ -d "$d" ] && [[ ":$LDP:" != *":$d:"* ]] && LDP="$LDP:$d"
  done
  for pair in libcudnn.so:libcudnn.so.9 libnvrtc.so:libnvrtc.so.13; do
    f=$(IFS=:; for d in $LDP; do [ -e "$d/${pair#*:}" ] && echo "$d/${pair#*:}" && break; done)
    [ -n "$f" ] && ln -sf "$f" "$WORK/links/${pair%%:*}"
  done
  ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6 ' || LDP="$LDP:$G/lib/fallback"
  WRAP=""
  if ! grep -qs -x '0x10de' /sys/class/drm/card*/device/vendor; then
    pci=$(timeout 15 nvidia-smi --query-gpu=pci.device_id --format=csv,noheader 2>/dev/null | head -n 1 | tr 'A-F' 'a-f')
    dev=0x${pci:2:4}
    [ ${#dev} -eq 6 ] || dev=0x2330
    mkdir -p "$WORK/sysclass/drm/card0/device"
    echo 0x10de >"$WORK/sysclass/drm/card0/device/vendor"
    echo "$dev" >"$WORK/sysclass/drm/card0/device/device"
    target=/sys/class/drm src=$WORK/sysclass/drm
    [ -d /sys/class/drm ] || { target=/sys/class; src=$WORK/sysclass; }
    printf '#!/usr/bin/env bash\nmount --bind %q %q || exit 97\nexec "$@"\n' "$src" "$target" >"$WORK/fakedrm.sh"
    for u in "unshare -m" "unshare -Urm"; do
      # shellcheck disable=SC2086
      if timeout 10 $u bash "$WORK/fakedrm.sh" cat /sys/class/drm/card0/device/vendor 2>/dev/null | grep -q 0x10de; then
        WRAP="$u bash $WORK/fakedrm.sh"
        break
      fi
    done
    [ -n "$WRAP" ] || say "no NVIDIA card in /sys/class/drm and no private mount namespace for a stand-in: the CUDA provider may offer no device"
  fi
  RUN="$WRAP env LD_LIBRARY_PATH='$LDP'"
fi
RUN=${RUN:-}
if [ -z "${GDB+x}" ]; then
  GDB=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -n 1 || true)
  [ -n "$GDB" ] || GDB=$(command -v gdb || true)
fi
say "infer.test $INFER_TEST; RUN=$RUN; ADMPO_ORT_LIB=${ADMPO_ORT_LIB:-unset}; GDB=${GDB:-none}; work $WORK"

# --- the graphs and their inputs
if [ -z "${GRAPHS:-}" ]; then
  GRAPHS=$WORK/graphs
  mkdir -p "$GRAPHS"
  (cd "$WORK" && ADMPO_GPU_EXPORT=$GRAPHS timeout -k 3 40 bash -c "$RUN '$INFER_TEST' -test.run '^TestGPUExportGraphs\$' -test.v") >"$WORK/export.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    say "exporting the graphs failed (rc $rc):"
    tail -n 20 "$WORK/export.log"
    exit 1
  fi
  say "graphs exported in $((SECONDS - T0))s: $(cd "$GRAPHS" && echo *.onnx)"
fi

left=$((BUDGET - (SECONDS - T0) - 5))
"$PYTHON" "$HERE/gpu_bisect.py" --infer-test "$INFER_TEST" --graphs "$GRAPHS" --targets "$TARGETS" \
  --controls "$CONTROLS" --work "$WORK" --out "$OUT" --run "$RUN" --provider "$PROVIDER" \
  --budget "$left" --try-timeout "${TRY_TIMEOUT:-25}" --par "${PAR:-8}" --gdb "$GDB"
rc=$?
# Logs and the cut graphs, without the large value dumps.
tar -czf "$OUT/bisect_logs.tgz" -C "$WORK" --exclude='*/all_values.npz' --exclude='*/all.onnx' --exclude='prefix_*.onnx' --exclude='graphs/hopper_*' . 2>/dev/null
say "done in $((SECONDS - T0))s (rc $rc): $OUT/bisect.txt, $OUT/bisect_logs.tgz ($(du -h "$OUT/bisect_logs.tgz" | cut -f1))"
exit $rc
