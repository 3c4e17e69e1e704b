#!/usr/bin/env bash
# mutation_check.sh: proves that the tests of admpo's core formulas can fail.
# Each mutation below changes one formula (an exact string, which must occur
# exactly once in its file) in a copy of the repository at HEAD; the named
# tests must pass on the unmutated copy and fail on the mutated one.
# docs/testing.md lists the mutations and the tests that kill them.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash scripts/mutation_check.sh [--only ID[,ID...]] [--list] [--logs DIR]

Copies the repository at HEAD (git archive; uncommitted changes are not
checked) to a scratch directory, then for each mutation in the table:
  1. runs its tests unmutated (they must pass and at least one must run:
     else "baseline fails"; one baseline run per package and test regex),
  2. applies the mutation (an exact string that must occur exactly once in
     its file: else "broken"), runs the tests again
     (nice -n 19 go test -count=1 -p 1 -run '^(REGEX)$' ./PKG/), restores
     the file.
Results, one line per mutation:
  killed            the tests fail on the mutant (what we want)
  SURVIVED          the tests pass on the mutant
  broken            the mutant does not compile, or its string is missing or
                    not unique
  baseline fails    the tests fail, or none runs, without the mutation
Exit status 0 when every mutation is killed, 1 otherwise, 2 on a usage error.

Options:
  --only ID[,ID...]  run only these mutations
  --list             print the table (id, file, package, tests) and exit
  --logs DIR         keep each go test run's output in DIR (ID.base.log,
                     ID.mut.log)
  -h, --help         this text
The scratch directory is removed on exit; the Go build cache is shared, so
only the first build of a run compiles everything.
EOF
}

# ---------------------------------------------------------------- the table --
# mut ID FILE PKG REGEX OLD NEW: in FILE (relative to the repository root),
# OLD becomes NEW; the tests of package PKG whose names match REGEX (whole
# names: ^(REGEX)$) must catch it. Each must compile: a mutant that does not
# is reported broken, not killed.
IDS=() FILES=() PKGS=() REGEXES=() OLDS=() NEWS=()
mut() {
  IDS+=("$1") FILES+=("$2") PKGS+=("$3") REGEXES+=("$4") OLDS+=("$5") NEWS+=("$6")
}

# U^ADM = sqrt(mean_d Var_k(mean next state)), the population variance.
mut uadm-sample-var infer/rollout.go infer 'TestUADMClosedForm|TestADMDirectMatchesReference' \
  'total += v / float64(kn)' 'total += v / float64(kn-1)'
mut uadm-no-sqrt infer/rollout.go infer 'TestUADMClosedForm|TestADMDirectMatchesReference' \
  'return math.Sqrt(total / float64(od))' 'return total / float64(od)'
# ADM-Roll: k uniform in 1..min(history, m).
mut drawk-always-longest infer/rollout.go infer 'TestDrawKUniform|TestADMDirectMatchesReference' \
  'k = append(k, 1+rng.Intn(w.Len[r]))' 'k = append(k, w.Len[r])'
mut drawk-never-longest infer/rollout.go infer 'TestDrawKUniform|TestADMDirectMatchesReference' \
  'k = append(k, 1+rng.Intn(w.Len[r]))' 'k = append(k, 1+rng.Intn(max(1, w.Len[r]-1)))'
mut drawk-from-m-clipped infer/rollout.go infer 'TestDrawKUniform|TestADMDirectMatchesReference' \
  'k = append(k, 1+rng.Intn(w.Len[r]))' 'k = append(k, min(w.Len[r], 1+rng.Intn(w.M)))'
# Roll-out samples: next = mean + exp(logvar/2)·eps.
mut rollout-sample-var-not-std infer/rollout.go infer 'TestADMDirectMatchesReference|TestEnsembleMatchesReference' \
  'math.Exp(0.5*float64(lv[d]))*e[d]' 'math.Exp(float64(lv[d]))*e[d]'
# The offline reward r - beta·U.
mut penalty-beta-one infer/rollout.go infer 'TestADMDirectMatchesReference|TestEnsembleMatchesReference' \
  'rew -= cfg.Penalty * u' 'rew -= u'
mut penalty-sign infer/rollout.go infer 'TestADMDirectMatchesReference|TestEnsembleMatchesReference' \
  'rew -= cfg.Penalty * u' 'rew += cfg.Penalty * u'
mut penalty-beta-one-train infer/rollout.go train 'TestADMPenaltyWhereKStepPredictionsDisagree' \
  'rew -= cfg.Penalty * u' 'rew -= u'
mut penalty-sign-train infer/rollout.go train 'TestADMPenaltyWhereKStepPredictionsDisagree' \
  'rew -= cfg.Penalty * u' 'rew += cfg.Penalty * u'
# MBPO/MOPO ensemble: a uniformly drawn elite predicts; MOPO's U is the max
# over all members of ||exp(logvar/2)|| over [obs, reward].
mut ensemble-draw-any-member infer/ensemble.go infer 'TestEnsembleMatchesReference' \
  'mem := e.elites[rng.Intn(len(e.elites))]' 'mem := rng.Intn(e.members)'
mut mopo-sum-members infer/ensemble.go infer 'TestEnsembleMatchesReference' \
  'worst = math.Max(worst, math.Sqrt(s))' 'worst = worst + math.Sqrt(s)'
mut mopo-std-not-var infer/ensemble.go infer 'TestEnsembleMatchesReference' \
  's += math.Exp(float64(v))' 's += math.Exp(0.5*float64(v))'
mut mopo-no-reward-dim infer/ensemble.go infer 'TestEnsembleMatchesReference' \
  'range e.lv[(k*n+q)*d : (k*n+q+1)*d]' 'range e.lv[(k*n+q)*d : (k*n+q)*d+od]'
mut mopo-elites-only infer/ensemble.go infer 'TestEnsembleMatchesReference' \
  'for k := 0; k < e.members; k++ {' 'for _, k := range e.elites {'
# D4RL normalised score 100·(R - random)/(expert - random).
mut score-no-random datasets/score.go datasets 'TestNormalizedScore' \
  '100 * (ret - lo) / (hi - lo)' '100 * ret / (hi - lo)'
# SAC: y = r + gamma(1-d)(min Q' - alpha log pi'), the actor's and alpha's losses.
mut sac-target-max-q sac/sac.go sac 'TestSACUpdateVsTorch' \
  'v := min(q1[i], q2[i]) - alpha*logp[i]' 'v := max(q1[i], q2[i]) - alpha*logp[i]'
mut sac-target-entropy-sign sac/sac.go sac 'TestSACUpdateVsTorch' \
  'v := min(q1[i], q2[i]) - alpha*logp[i]' 'v := min(q1[i], q2[i]) + alpha*logp[i]'
mut sac-target-no-terminal sac/sac.go sac 'TestSACUpdateVsTorch' \
  'gamma*(1-b.Terminal[i])*v' 'gamma*v'
mut sac-alpha-grad-sign sac/sac.go sac 'TestSACUpdateVsTorch' \
  's.alphaGrad[0][0] = float32(-m)' 's.alphaGrad[0][0] = float32(m)'
mut sac-target-entropy-minus sac/sac.go sac 'TestSACUpdateVsTorch' \
  'm := mean32(logp) + s.Cfg.TargetEntropy' 'm := mean32(logp) - s.Cfg.TargetEntropy'
mut sac-actor-max-q models/sac_graph.go sac 'TestSACUpdateVsTorch' \
  'G.MinBetween(q1, q2)' 'G.MaxBetween(q1, q2)'
mut squash-logp-no-tanh-const internal/cpukern/elementwise.go sac 'TestSACUpdateVsTorch' \
  '(-0.5*math.Log(2*math.Pi) - 2*math.Ln2))}' '(-0.5*math.Log(2*math.Pi)))}'
# Polyak: target <- (1-tau)·target + tau·critic (one body for every kernel path).
mut polyak-swap internal/cpukern/elementwise.c internal/cpukern 'TestPolyakMatchesGo' \
  'keep * dst[i] + tau * src[i]' 'tau * dst[i] + keep * src[i]'
mut polyak-swap-sac internal/cpukern/elementwise.c sac 'TestSACUpdateVsTorch' \
  'keep * dst[i] + tau * src[i]' 'tau * dst[i] + keep * src[i]'
# Behaviour cloning: mean over batch and action dims of (Scale·tanh(u) + Bias - a)².
mut bc-no-tanh models/bc_graph.go models 'TestBCGraphFiniteDiff' \
  'if y, err = G.Tanh(u); err == nil {' 'if y, err = u, nil; err == nil {'
mut bc-sum-over-dims models/bc_graph.go models 'TestBCGraphFiniteDiff' \
  'sacConst(1/float64(batch*ad))' 'sacConst(1/float64(batch))'
# The models' Gaussian NLL sum_d (mu-y)² e^-lv + lv and its gradients.
mut nll-no-logvar-term models/ops/kernels.go models 'TestGaussianNLLAndColumns|TestADMMatchesPyTorch' \
  'rs += e*e*math.Exp(-float64(lv[j])) + float64(lv[j])' 'rs += e*e*math.Exp(-float64(lv[j]))'
mut nll-no-inverse-variance models/ops/kernels.go models 'TestGaussianNLLAndColumns|TestADMMatchesPyTorch' \
  'rs += e*e*math.Exp(-float64(lv[j])) + float64(lv[j])' 'rs += e*e + float64(lv[j])'
mut nll-grad-mean-no-inverse-variance models/ops/kernels.go models 'TestGaussianNLLAndColumns|TestADMMatchesPyTorch' \
  'dmu[j] = float32(c * 2 * e * iv)' 'dmu[j] = float32(c * 2 * e)'
mut nll-grad-logvar-no-one models/ops/kernels.go models 'TestGaussianNLLAndColumns|TestADMMatchesPyTorch' \
  'dlv[j] = float32(c * (1 - e*e*iv))' 'dlv[j] = float32(c * (0 - e*e*iv))'
# The log-variance bounds' penalty 0.01·sum Max - 0.01·sum Min.
mut bounds-penalty-max-coef models/graph_rnn.go models 'TestSumSquaresAndPenalty|TestADMMatchesPyTorch' \
  'ops.ScaledSum(n.Max, 0.01)' 'ops.ScaledSum(n.Max, 0.1)'
mut bounds-penalty-min-sign models/graph_rnn.go models 'TestSumSquaresAndPenalty|TestADMMatchesPyTorch' \
  'ops.ScaledSum(n.Min, -0.01)' 'ops.ScaledSum(n.Min, 0.01)'
# MC dropout: kept units scaled by 1/(1-p) (inverted dropout), in training
# masks and in the ONNX roll-out graphs.
mut dropout-train-no-scale internal/cpukern/elementwise.go models 'TestDropoutMask' \
  'keep := float32(1 / (1 - p))' 'keep := float32(1)'
mut dropout-onnx-no-scale onnx/adm.go infer 'TestADMDropoutDirectMatchesReference|TestADMDropoutPredictMatchesReference' \
  'g.Scalar("dropout_scale", float32(1/(1-p)))' 'g.Scalar("dropout_scale", float32(1))'
# The ADM: the start state of the k-step plan beside the k actions taken
# since (training batches and both roll-out engines), targets and
# predictions as the change from the start state.
mut adm-fit-input-current-state dynamics/fit_adm.go dynamics 'TestADMBatchLayout' \
  'if !bootstrap || k == 0 {' 'if k == 0 {'
mut adm-fit-target-not-delta dynamics/fit_adm.go dynamics 'TestADMBatchLayout' \
  'tg[j] = next[j] - s0[j]' 'tg[j] = next[j]'
mut adm-next-not-start-plus-delta onnx/adm.go infer 'TestADMDirectMatchesReference' \
  'next := g.Op("Add", []string{obs, parts[0]})' 'next := g.Op("Identity", []string{parts[0]})'
mut adm-roll-input-current-state infer/adm.go infer 'TestADMDirectMatchesReference' \
  'copy(e.obs[i*od:(i+1)*od], w.State(pl.r, l-pl.k))' 'copy(e.obs[i*od:(i+1)*od], w.State(pl.r, l-1))'
mut adm-roll-actions-last-only infer/adm.go infer 'TestADMDirectMatchesReference' \
  'copy(dst, w.Action(pl.r, l-pl.k+j))' 'copy(dst, w.Action(pl.r, l-1))'
mut adm-incremental-input-current-state infer/adm_incremental.go infer 'TestADMIncrementalMatchesDirect' \
  'copy(e.obs[(lo+q)*od:], w.State(pr.r, pr.j))' 'copy(e.obs[(lo+q)*od:], w.State(pr.r, w.Len[pr.r]-1))'
# Real rows per batch int(batch·ratio) (the authors' floor).
mut real-rows-ceil train/loop.go train 'TestRealRowsAsAuthors' \
  'return int(ratio * float64(n))' 'return int(math.Ceil(ratio * float64(n)))'
# MBPO's roll-out length schedule From + clamp((t-A)/(B-A), 0, 1)·(To-From), floored.
mut schedule-no-lower-clamp train/schedule.go train 'TestScheduleMatchesPaper' \
  'dx = max(0, min(1, dx))' 'dx = min(1, dx)'
mut schedule-rounded train/schedule.go train 'TestScheduleMatchesPaper' \
  'return int(float64(s.From) + dx*float64(s.To-s.From))' 'return int(float64(s.From) + dx*float64(s.To-s.From) + 0.5)'
# The termination rules applied to model states: hopper healthy while
# z > 0.7 and |angle| < 0.2, walker2d while 0.8 < z < 2 and |angle| < 1.
mut hopper-done-height envs/tasks.go envs 'TestDoneOnModelStates|TestBuiltinTaskFilesMatchGo' \
  'o[0] > 0.7 && o[1] > -0.2 && o[1] < 0.2' 'o[0] > 0.6 && o[1] > -0.2 && o[1] < 0.2'
mut hopper-done-angle envs/tasks.go envs 'TestDoneOnModelStates|TestTerminationAgreesWithEnv|TestBuiltinTaskFilesMatchGo' \
  'o[0] > 0.7 && o[1] > -0.2 && o[1] < 0.2' 'o[0] > 0.7 && o[1] < 0.2'
mut walker2d-done-no-height-cap envs/tasks.go envs 'TestDoneOnModelStates|TestHealthThresholds|TestBuiltinTaskFilesMatchGo' \
  'o[0] > 0.8 && o[0] < 2.0 && o[1] > -1 && o[1] < 1' 'o[0] > 0.8 && o[1] > -1 && o[1] < 1'

# --------------------------------------------------------------- arguments --
only="" list=0 logs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || { echo "mutation_check: --only needs IDs" >&2; usage >&2; exit 2; }; only=$2; shift 2 ;;
    --only=*) only=${1#--only=}; shift ;;
    --list) list=1; shift ;;
    --logs) [ $# -ge 2 ] || { echo "mutation_check: --logs needs a directory" >&2; usage >&2; exit 2; }; logs=$2; shift 2 ;;
    --logs=*) logs=${1#--logs=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mutation_check: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

n=${#IDS[@]}
selected=()
if [ -n "$only" ]; then
  IFS=, read -r -a want <<<"$only"
  for w in "${want[@]}"; do
    found=0
    for ((i = 0; i < n; i++)); do
      if [ "${IDS[i]}" = "$w" ]; then selected+=("$i"); found=1; fi
    done
    [ "$found" = 1 ] || { echo "mutation_check: no mutation $w (--list shows them)" >&2; exit 2; }
  done
else
  for ((i = 0; i < n; i++)); do selected+=("$i"); done
fi

if [ "$list" = 1 ]; then
  printf '%-36s %-32s %-18s %s\n' ID FILE PACKAGE TESTS
  for i in "${selected[@]}"; do
    printf '%-36s %-32s %-18s %s\n' "${IDS[i]}" "${FILES[i]}" "${PKGS[i]}" "${REGEXES[i]}"
  done
  exit 0
fi

root=$(git rev-parse --show-toplevel)
if [ -n "$logs" ]; then
  mkdir -p "$logs"
  logs=$(cd "$logs" && pwd)
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/admpo-mutation.XXXXXX")
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$tmp/repo" "$tmp/orig" "$tmp/log"
git -C "$root" archive HEAD | tar -x -C "$tmp/repo"
echo "mutation_check: $(git -C "$root" rev-parse --short HEAD) in $tmp/repo, ${#selected[@]} mutations"

# gotest PKG REGEX LOG: the tests whose whole name matches REGEX, verbose,
# output to LOG; go test's status.
gotest() {
  (cd "$tmp/repo" && nice -n 19 go test -count=1 -p 1 -timeout 20m -v -run "^($2)\$" "./$1/") >"$3" 2>&1
}

# replace FILE OLD NEW: OLD (exactly once in FILE) becomes NEW; status 1
# with a message when OLD is missing or not unique.
replace() {
  local f=$1 old=$2 new=$3 text rest
  text=$(cat "$f"; printf x)
  text=${text%x}
  rest=${text#*"$old"}
  if [ "$rest" = "$text" ]; then
    echo "string not found"
    return 1
  fi
  case "$rest" in
    *"$old"*) echo "string occurs more than once"; return 1 ;;
  esac
  printf '%s' "${text/"$old"/"$new"}" >"$f"
}

# failed LOG: the names of the tests that failed (top level), or why not.
failed() {
  local names
  names=$(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$1" | tr '\n' ' ')
  if [ -n "$names" ]; then
    echo "${names% }"
  elif grep -q 'panic: test timed out' "$1"; then
    echo "timed out"
  else
    echo "$(grep -m1 -E '^(panic|FAIL)' "$1" || echo 'go test failed')"
  fi
}

declare -A base_state base_note
killed=0 survived=0 broken=0 basefail=0
start_all=$SECONDS
for i in "${selected[@]}"; do
  id=${IDS[i]} file=${FILES[i]} pkg=${PKGS[i]} re=${REGEXES[i]}
  t0=$SECONDS
  key="$pkg|$re"
  if [ -z "${base_state[$key]:-}" ]; then
    blog="$tmp/log/$id.base.log"
    if gotest "$pkg" "$re" "$blog"; then
      passes=$(grep -c '^--- PASS' "$blog" || true)
      skips=$(grep -c '^--- SKIP' "$blog" || true)
      if [ "$passes" -eq 0 ]; then
        base_state[$key]=fail base_note[$key]="no test ran ($skips skipped)"
      else
        base_state[$key]=ok base_note[$key]="$passes passed, $skips skipped"
      fi
    else
      base_state[$key]=fail base_note[$key]=$(failed "$blog")
    fi
    [ -z "$logs" ] || cp "$blog" "$logs/$id.base.log"
  fi
  if [ "${base_state[$key]}" != ok ]; then
    basefail=$((basefail + 1))
    printf '%-36s %-15s %4ds  %s: %s\n' "$id" "baseline fails" $((SECONDS - t0)) "$pkg" "${base_note[$key]}"
    continue
  fi
  src="$tmp/repo/$file"
  if [ ! -f "$src" ]; then
    broken=$((broken + 1))
    printf '%-36s %-15s %4ds  %s: no such file\n' "$id" broken $((SECONDS - t0)) "$file"
    continue
  fi
  cp -p "$src" "$tmp/orig/file"
  if ! why=$(replace "$src" "${OLDS[i]}" "${NEWS[i]}"); then
    cp -p "$tmp/orig/file" "$src"
    broken=$((broken + 1))
    printf '%-36s %-15s %4ds  %s: %s\n' "$id" broken $((SECONDS - t0)) "$file" "$why"
    continue
  fi
  mlog="$tmp/log/$id.mut.log"
  status=0
  gotest "$pkg" "$re" "$mlog" || status=$?
  cp -p "$tmp/orig/file" "$src"
  [ -z "$logs" ] || cp "$mlog" "$logs/$id.mut.log"
  dt=$((SECONDS - t0))
  if grep -qE '\[(build|setup) failed\]' "$mlog"; then
    broken=$((broken + 1))
    printf '%-36s %-15s %4ds  does not compile: %s\n' "$id" broken "$dt" \
      "$(grep -m1 -E '\.(go|c|h):[0-9]+' "$mlog" || echo "see the log")"
  elif [ "$status" -eq 0 ]; then
    survived=$((survived + 1))
    printf '%-36s %-15s %4ds  %s -run %s passes\n' "$id" SURVIVED "$dt" "$pkg" "$re"
  else
    killed=$((killed + 1))
    printf '%-36s %-15s %4ds  %s: %s\n' "$id" killed "$dt" "$pkg" "$(failed "$mlog")"
  fi
done
total=$((SECONDS - start_all))
printf '\n%d mutations: %d killed, %d survived, %d broken, %d with a failing baseline (%dm%02ds)\n' \
  "${#selected[@]}" "$killed" "$survived" "$broken" "$basefail" $((total / 60)) $((total % 60))
[ $((survived + broken + basefail)) -eq 0 ]
