#!/usr/bin/env bash
# `npm run demo`: installs what is missing, then serves the demo at http://127.0.0.1:5173/ (COOP/COEP set).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec npx vite --config vite.config.ts "$@"
