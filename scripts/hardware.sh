#!/usr/bin/env bash
# `npm run test:hardware`: the hardware lane (DESIGN.md "Testing lanes"), opt-in, never part of `npm test`.
#   1. build what ships (scripts/build.sh)
#   2. Playwright with TENON_HARDWARE=1: project `hardware-adapter` FAILS unless Chromium's WebGPU adapter is
#      a real GPU (not a fallback adapter, not SwiftShader); project `hardware` depends on it and runs the
#      same e2e specs plus the demo benchmark (bench/results/hardware-demo.json)
#   3. only on a real GPU: the benchmarks (bench:storage, bench:submit, bench:dataplane, bench:session),
#      each writing bench/results/*.json; their tables print as they run
# Exit status: non-zero when the adapter is not a real GPU or anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 1
source scripts/env.sh
bash scripts/build.sh || exit 1
export TENON_HARDWARE=1 TENON_BUILT=1
mkdir -p .vitest-reports
if ! npx playwright test; then
  echo "tenon hardware: FAILED (see bench/results/hardware-adapter.json for the adapter this machine offers)"
  exit 1
fi
failed=0
for bench in bench:storage bench:submit bench:dataplane bench:session; do
  echo
  echo "== $bench =="
  npm run "$bench" || { echo "tenon hardware: $bench failed"; failed=1; }
done
echo
echo "tenon hardware: adapter $(node -e "const a=require('./bench/results/hardware-adapter.json').adapter;console.log([a.vendor,a.architecture,a.description].filter(Boolean).join(' / '))")"
echo "tenon hardware: results in bench/results/ (hardware-adapter.json, hardware-demo.json, storage.json, submit.json, dataplane.json, session.json)"
exit "$failed"
