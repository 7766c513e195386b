// Bundle variant of src/dataplane/worker-entry.ts (substituted by vite.lib.config.ts): the agent worker
// is dist/dataplane.worker.js beside the bundle, or in the folder set by setWorkerBaseUrl. See
// src/bundle/pool-entry.ts for why the ES bundle keeps the literal new Worker(new URL(...)) form.
import { TenonError } from '../errors.js';
import { workerBaseUrl } from '../worker-base.js';

export function startDataPlaneWorker(): Worker {
  const base = workerBaseUrl();
  if (base !== undefined) return new Worker(new URL('dataplane.worker.js', base), { type: 'module' });
  if (typeof import.meta.url !== 'string') {
    throw new TenonError('ENOENT', 'cannot locate dataplane.worker.js: call setWorkerBaseUrl() first', { op: 'startDataPlaneWorker', reason: 'worker-url' });
  }
  return new Worker(new URL(/* @vite-ignore */ './dataplane.worker.js', import.meta.url), { type: 'module' });
}
