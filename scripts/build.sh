#!/usr/bin/env bash
# `npm run build`: everything the package ships, from a clean dist/.
#   dist/tenon.js, dist/tenon.iife.js         ES module and script-tag (global `tenon`) bundles
#   dist/pool.worker.js, dist/dataplane.worker.js   browser workers both bundles start (found beside them)
#   dist/types/                               declarations (tsc, tsconfig.types.json)
#   dist/workers/                             Node builds: the `tenon` CLI and the Node pool worker
#   dist/demo/                                the inference demo as static files (vite.config.ts)
# Any failing step fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
for mode in esm iife pool-worker dataplane-worker rank-worker; do
  npx vite build --config vite.lib.config.ts --mode "$mode"
done
npx tsc -p tsconfig.types.json
# The declarations name WebGPU's types (GPUDevice, ...): @webgpu/types (a dependency) provides them.
types=dist/types/index.d.ts
{ echo '/// <reference types="@webgpu/types" />'; cat "$types"; } > "$types.tmp" && mv "$types.tmp" "$types"
npx vite build --config vite.node.config.ts
npx vite build --config vite.config.ts --logLevel warn
echo "tenon: built $(cd dist && ls tenon.js tenon.iife.js pool.worker.js dataplane.worker.js | tr '\n' ' ')+ types, Node CLI and demo"
