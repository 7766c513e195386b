// Bundle variant of src/session/partition/rank-entry.ts (vite.lib.config.ts substitutes it in the library
// build): the rank worker is dist/rank.worker.js beside the bundle, or in the folder set by
// setWorkerBaseUrl; the Node build is dist/workers/rank.worker.js. Same URL rules as pool-entry.ts.
import { TenonError } from '../errors.js';
import { workerBaseUrl } from '../worker-base.js';

export function startRankWorker(): Worker {
  const base = workerBaseUrl();
  if (base !== undefined) return new Worker(new URL('rank.worker.js', base), { type: 'module' });
  if (typeof import.meta.url !== 'string') {
    throw new TenonError('ENOENT', 'cannot locate rank.worker.js: call setWorkerBaseUrl() first', { op: 'PartitionedSession.create', reason: 'worker-url' });
  }
  return new Worker(new URL(/* @vite-ignore */ './rank.worker.js', import.meta.url), { type: 'module' });
}

/** The Node build of the rank worker, shipped in dist/workers/ beside the bundle. */
export function nodeRankWorkerUrl(): URL {
  return new URL(/* @vite-ignore */ './workers/rank.worker.js', import.meta.url);
}
