#!/usr/bin/env bash
# `npm test`: the whole suite, as CI runs it (.ci/run calls exactly this).
#   1. install what is missing (system packages, npm packages)
#   2. type check   3. guarantee ledger (contracts checker + its self-test)
#   4. node lane (host + WebGPU via Dawn)   5. browser lane (Chromium: WebGPU, OPFS, SAB, workers)
#   6. mutants: every designated bad implementation (contracts/mutants.json) must fail its suites
# Every step runs even if an earlier one failed; scripts/summary.mjs then prints one line totalling
# every lane, `tenon: N passed, M failed[, K skipped]`, and sets the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || { echo "tenon: installation failed"; echo "tenon: 0 passed, 1 failed"; exit 1; }
source scripts/env.sh
mkdir -p .vitest-reports
rm -f .vitest-reports/*.json .vitest-reports/*.status

step() { # name, command...
  local name=$1
  shift
  echo
  echo "== $name =="
  "$@"
  echo $? > ".vitest-reports/$name.status"
}

step typecheck npx tsc -p tsconfig.json --noEmit
step contracts node scripts/contracts.mjs
step contracts-selftest node scripts/contracts.selftest.mjs
step node bash scripts/lane.sh node
step browser bash scripts/lane.sh browser
step mutants node scripts/mutants.mjs --report .vitest-reports/mutants.json
echo
exec node scripts/summary.mjs typecheck contracts contracts-selftest node browser mutants
