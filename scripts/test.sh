#!/usr/bin/env bash
# `npm test`: the whole suite, as CI runs it (.ci/run calls exactly this).
#   1. install what is missing (system packages, npm packages)
#   2. type check   3. guarantee ledger (contracts checker + its self-test)
#   4. node lane (host + WebGPU via Dawn)   5. browser lane (Chromium: WebGPU, OPFS, SAB, workers)
#      the two run at the same time (TENON_PARALLEL_LANES=0: one after the other)
#   4b. node-relaxed lane (the WebAssembly suites in Node with V8's relaxed-SIMD flag: the relaxed kernel
#      set, which the node lane's plain Node never selects), after the node lane, beside the browser lane
#   5b. build (scripts/build.sh: the bundles, workers, types, Node builds and demo that ship)
#   5c. e2e lane (@playwright/test: the built bundles, the packed package, the demo, whole-page faults)
#   6. mutants: every designated bad implementation (contracts/mutants/*.json) must make a test naming one
#      of its guarantees fail (scripts/mutants.mjs; TENON_MUTANT_JOBS=N runs the node mutants in N parallel
#      jobs, default 2)
# Every step runs even if an earlier one failed; scripts/summary.mjs then prints the mutants on their own
# line (`mutants: N killed of M`; mutants are not tests and never add to `passed`, but a mutant step that
# failed counts as one failure) and one line totalling every lane, `tenon: N passed, M failed[, K skipped]`,
# and sets the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || { echo "tenon: installation failed"; echo "tenon: 0 passed, 1 failed"; exit 1; }
source scripts/env.sh
# This run's reports live in a directory of their own, so a lane run elsewhere at the same time (another
# terminal, the mutant runner) can never overwrite what the summary totals.
mkdir -p .vitest-reports
export TENON_REPORT_DIR
TENON_REPORT_DIR=$(mktemp -d .vitest-reports/run.XXXXXX)
trap 'rm -rf "$TENON_REPORT_DIR"' EXIT

step() { # name, command...
  local name=$1
  shift
  local started=$SECONDS
  echo
  echo "== $name =="
  "$@"
  echo $? > "$TENON_REPORT_DIR/$name.status"
  echo "($name: $((SECONDS - started))s)"
}

step typecheck npx tsc -p tsconfig.json --noEmit
step contracts node scripts/contracts.mjs
step contracts-selftest node scripts/contracts.selftest.mjs
# TENON_PARALLEL_LANES=1 runs the node and browser lanes at the same time (two vitest processes, each with
# its own JSON report in $TENON_REPORT_DIR; neither lane reads what the other writes), each lane's output in
# its own log, printed whole when that lane ends so the two never interleave. On by default (each lane
# alone left much of the second core idle); TENON_PARALLEL_LANES=0 runs them one after the other.
background_step() { # name, command...: the step in the background, its output in $TENON_REPORT_DIR/<name>.log
  local name=$1
  shift
  ( "$@" > "$TENON_REPORT_DIR/$name.log" 2>&1; echo $? > "$TENON_REPORT_DIR/$name.status" ) &
}
show_step() { # name, pid: waits for the background step, then prints its output
  wait "$2"
  echo
  echo "== $1 =="
  cat "$TENON_REPORT_DIR/$1.log"
}
if [ "${TENON_PARALLEL_LANES:-1}" = 1 ]; then
  echo
  echo "== node + browser lanes (at the same time; each lane's output follows when it ends) =="
  lanes_started=$SECONDS
  background_step node bash scripts/lane.sh node
  node_pid=$!
  background_step browser bash scripts/lane.sh browser
  browser_pid=$!
  show_step node "$node_pid"
  echo "(node: $((SECONDS - lanes_started))s, the browser lane running alongside)"
  step node-relaxed bash scripts/lane.sh node-relaxed
  show_step browser "$browser_pid"
  echo "(browser: $((SECONDS - lanes_started))s after the lanes started)"
else
  step node bash scripts/lane.sh node
  step node-relaxed bash scripts/lane.sh node-relaxed
  step browser bash scripts/lane.sh browser
fi
step build bash scripts/build.sh
TENON_BUILT=1 step e2e npx playwright test
step mutants node scripts/mutants.mjs --report "$TENON_REPORT_DIR/mutants.json" --lane-reports "$TENON_REPORT_DIR"
echo
node scripts/summary.mjs --dir "$TENON_REPORT_DIR" typecheck contracts contracts-selftest node node-relaxed browser build e2e mutants
