// Where tenon's own worker scripts come from (the pool worker and the data-plane agent worker).
//
// Running from source (Vite dev server, vitest) each worker is the TypeScript entry in workers/, found
// by Vite through `new Worker(new URL(..., import.meta.url))`. The built bundles (`npm run build`) ship
// the workers as self-contained files beside the bundle: dist/pool.worker.js and dist/dataplane.worker.js.
// The ES module bundle finds them through its own `import.meta.url` (and bundlers that understand that
// pattern copy them into the app's build); the script-tag (IIFE) bundle has no `import.meta`, so it
// remembers the URL of the <script> element that loaded it. An app that serves the worker files from
// elsewhere (a CDN, a different folder) says so once with setWorkerBaseUrl before starting workers.
// Thread: any; the setting is per JavaScript realm.

/** The `src` of the classic <script> that is evaluating this module right now (the IIFE bundle), if any. */
const loadingScript: string | undefined = (() => {
  if (typeof document === 'undefined') return undefined;
  const script = document.currentScript;
  return script !== null && 'src' in script && typeof script.src === 'string' && script.src !== '' ? script.src : undefined;
})();

let configured: string | undefined;

/**
 * Makes tenon load its worker scripts (`pool.worker.js`, `dataplane.worker.js`) from the folder `url`
 * (absolute, or relative to the page). Only affects workers started afterwards. Pass `undefined` to go back
 * to the default (beside the bundle).
 */
export function setWorkerBaseUrl(url: string | URL | undefined): void {
  if (url === undefined) {
    configured = undefined;
    return;
  }
  const base = typeof location === 'undefined' ? undefined : location.href;
  const href = new URL(url, base).href;
  configured = href.endsWith('/') ? href : `${href}/`;
}

/** The folder set by setWorkerBaseUrl, else the folder of the script-tag bundle that loaded tenon, if any. */
export function workerBaseUrl(): string | undefined {
  return configured ?? loadingScript;
}

/** The folder set by setWorkerBaseUrl, if any (a script-tag default does not count). */
export function configuredWorkerBaseUrl(): string | undefined {
  return configured;
}
