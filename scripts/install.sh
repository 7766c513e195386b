#!/usr/bin/env bash
# Brings a checkout to a runnable state: system packages (setup.sh), then the pinned npm packages when
# node_modules is missing or older than package-lock.json. Quiet when nothing needs doing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "tenon: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
