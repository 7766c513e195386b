// Starting tenon's data-plane agent worker (workers/dataplane.worker.ts: one data-plane session inside
// a dedicated worker, driven through wrapDataPlaneAgent). From source this is the TypeScript entry; the
// library build (vite.lib.config.ts) swaps this module for src/bundle/dataplane-entry.ts, which starts
// dist/dataplane.worker.js beside the bundle. Both honour setWorkerBaseUrl (src/worker-base.ts).
import { configuredWorkerBaseUrl } from '../worker-base.js';

/** Starts one data-plane agent worker; wrap it with wrapDataPlaneAgent and connect it with a session port. */
export function startDataPlaneWorker(): Worker {
  const base = configuredWorkerBaseUrl();
  if (base !== undefined) return new Worker(new URL('dataplane.worker.js', base), { type: 'module' });
  return new Worker(new URL('../../workers/dataplane.worker.ts', import.meta.url), { type: 'module' });
}
