#!/usr/bin/env bash
# `npm run demo`: installs what is missing, builds the package when dist/ is missing or older than the
# sources (the demo imports the built bundle, as any app would), then serves the demo at
# http://127.0.0.1:5173/ (COOP/COEP set). Extra arguments go to vite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
if [ ! -f dist/tenon.js ] || [ ! -f dist/pool.worker.js ] || [ -n "$(find src workers shaders -newer dist/tenon.js -print -quit)" ]; then
  echo "tenon: building the package (npm run build)"
  bash scripts/build.sh >/dev/null
fi
exec npx vite --config vite.config.ts "$@"
