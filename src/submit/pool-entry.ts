// How the pool starts its default worker when tenon runs from source (Vite dev server, vitest, Node
// tests): the TypeScript entry workers/pool.worker.ts in browsers, the Node build of it in Node. The
// library build (vite.lib.config.ts) swaps this module for src/bundle/pool-entry.ts, which finds the
// built dist/pool.worker.js beside the bundle. Both variants honour setWorkerBaseUrl (src/worker-base.ts).
import { configuredWorkerBaseUrl } from '../worker-base.js';

/** Starts one browser pool worker (a module worker). */
export function startPoolWorker(): Worker {
  const base = configuredWorkerBaseUrl();
  if (base !== undefined) return new Worker(new URL('pool.worker.js', base), { type: 'module' });
  return new Worker(new URL('../../workers/pool.worker.ts', import.meta.url), { type: 'module' });
}

/** The Node pool worker script (Node cannot run TypeScript: scripts/lane.sh builds it first). */
export function nodePoolWorkerUrl(): URL {
  return new URL('../../dist/workers/pool.worker.js', import.meta.url);
}
