// Bundle variant of src/submit/pool-entry.ts (vite.lib.config.ts substitutes it in the library build):
// the pool worker is dist/pool.worker.js beside the bundle, or in the folder set by setWorkerBaseUrl.
// The ES module bundle keeps the literal `new Worker(new URL('./pool.worker.js', import.meta.url))` so an
// app's bundler (Vite, webpack) recognises it and ships the worker with the app; the script-tag bundle
// has no import.meta and uses the URL of the <script> that loaded it.
import { TenonError } from '../errors.js';
import { workerBaseUrl } from '../worker-base.js';

export function startPoolWorker(): Worker {
  const base = workerBaseUrl();
  if (base !== undefined) return new Worker(new URL('pool.worker.js', base), { type: 'module' });
  if (typeof import.meta.url !== 'string') {
    throw new TenonError('ENOENT', 'cannot locate pool.worker.js: call setWorkerBaseUrl() first', { op: 'createWorkerPool', reason: 'worker-url' });
  }
  return new Worker(new URL(/* @vite-ignore */ './pool.worker.js', import.meta.url), { type: 'module' });
}

/** The Node build of the pool worker, shipped in dist/workers/ beside the bundle. */
export function nodePoolWorkerUrl(): URL {
  return new URL(/* @vite-ignore */ './workers/pool.worker.js', import.meta.url);
}
