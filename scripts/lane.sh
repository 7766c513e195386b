#!/usr/bin/env bash
# Runs one test lane or benchmark with the project's environment:
#   node | node-relaxed | browser
#                           vitest project of that name (JSON report in $TENON_REPORT_DIR/<lane>.json);
#                           node-relaxed: the WebAssembly suites again, on the relaxed-SIMD kernel set
#   bench-storage           the storage benchmark (bench/storage.bench.ts)
#   bench-submit            the execution-layer benchmark: its Chromium part (bench/submit.browser.bench.ts)
#                           then its Node part (bench/submit.bench.ts), which merges both into
#                           bench/results/submit.json and prints the ratio table
#   bench-session           the inference-session benchmark: its Chromium part (bench/session.browser.bench.ts)
#                           then its Node part (bench/session.bench.ts), which merges both into
#                           bench/results/session.json and prints the ratio table
#   bench-models            the model benchmark: its Chromium part (bench/models.browser.bench.ts) then its
#                           Node part (bench/models.bench.ts), which merges both into bench/results/models.json
#                           and prints the tables
# Extra arguments go to vitest (e.g. a file filter).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
lane=${1:?lane name}
shift
# JSON reports go to TENON_REPORT_DIR (default .vitest-reports); the mutant runner points it elsewhere so
# its runs never overwrite the lane reports that scripts/summary.mjs totals.
reports=${TENON_REPORT_DIR:-.vitest-reports}
mkdir -p "$reports"
case "$lane" in
  node|node-relaxed|browser)
    rm -f "$reports/$lane.json"
    # Node worker_threads cannot run TypeScript: the pool worker is built first (about half a second).
    # Not for node-relaxed: its suites start no worker, and in npm test it runs beside the browser lane,
    # whose Vite server need not see dist/workers rewritten.
    if [ "$lane" = node ]; then npx vite build --config vite.node.config.ts --logLevel error >/dev/null || exit 1; fi
    exec npx vitest run --project "$lane" --reporter=default --reporter=json \
      --outputFile.json="$reports/$lane.json" "$@"
    ;;
  bench-storage)
    exec npx vitest run --config bench/vitest.bench.config.ts bench/storage.bench.ts "$@"
    ;;
  bench-submit)
    # The browser part leaves its records for the Node part; a stale file from an earlier run never merges.
    rm -f bench/results/submit.chromium.json
    npx vitest run --config bench/vitest.browser-bench.config.ts bench/submit.browser.bench.ts "$@" || exit 1
    exec npx vitest run --config bench/vitest.bench.config.ts bench/submit.bench.ts "$@"
    ;;
  bench-session)
    # As bench-submit: the browser part's records merge only from this run.
    rm -f bench/results/session.chromium.json
    npx vitest run --config bench/vitest.session-browser.config.ts "$@" || exit 1
    exec npx vitest run --config bench/vitest.bench.config.ts bench/session.bench.ts "$@"
    ;;
  bench-models)
    # As bench-submit: the browser part's records merge only from this run.
    rm -f bench/results/models.chromium.json
    npx vitest run --config bench/vitest.models-browser.config.ts "$@" || exit 1
    exec npx vitest run --config bench/vitest.bench.config.ts bench/models.bench.ts "$@"
    ;;
  *)
    echo "unknown lane: $lane" >&2
    exit 2
    ;;
esac
