// How rank workers start when tenon runs from source (Vite dev server, vitest, Node tests): the TypeScript
// entry workers/rank.worker.ts in browsers, its Node build in Node. The library build (vite.lib.config.ts)
// swaps this module for src/bundle/rank-entry.ts, which finds the built dist/rank.worker.js beside the
// bundle. Both variants honour setWorkerBaseUrl (src/worker-base.ts).
import { configuredWorkerBaseUrl } from '../../worker-base.js';

/** Starts one browser rank worker (a module worker). */
export function startRankWorker(): Worker {
  const base = configuredWorkerBaseUrl();
  if (base !== undefined) return new Worker(new URL('rank.worker.js', base), { type: 'module' });
  return new Worker(new URL('../../../workers/rank.worker.ts', import.meta.url), { type: 'module' });
}

/** The Node rank worker script (Node cannot run TypeScript: scripts/lane.sh builds it first). */
export function nodeRankWorkerUrl(): URL {
  return new URL('../../../dist/workers/rank.worker.js', import.meta.url);
}
