#!/usr/bin/env bash
# Runs one test lane or benchmark with the project's environment:
#   node | browser          vitest project of that name (JSON report in .vitest-reports/<lane>.json)
#   bench-storage           the storage benchmark (bench/storage.bench.ts)
# Extra arguments go to vitest (e.g. a file filter).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
lane=${1:?lane name}
shift
mkdir -p .vitest-reports
case "$lane" in
  node|browser)
    rm -f ".vitest-reports/$lane.json"
    exec npx vitest run --project "$lane" --reporter=default --reporter=json \
      --outputFile.json=".vitest-reports/$lane.json" "$@"
    ;;
  bench-storage)
    exec npx vitest run --config bench/vitest.bench.config.ts bench/storage.bench.ts "$@"
    ;;
  *)
    echo "unknown lane: $lane" >&2
    exit 2
    ;;
esac
